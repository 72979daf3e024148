package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

func TestWorkDirRefusesLinksAndEnforcesTheQuota(t *testing.T) {
	w, err := newWorkDir(t.TempDir(), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer w.remove()
	g := w.fs()
	if errno := g.Symlink("../../etc/passwd", "x"); errno != experimentalsys.EPERM {
		t.Errorf("Symlink = %v, want EPERM", errno)
	}
	if errno := g.Link("a", "b"); errno != experimentalsys.EPERM {
		t.Errorf("Link = %v, want EPERM", errno)
	}
	// A link the host left there is not followed either.
	if err := os.Symlink("/etc/hostname", filepath.Join(w.dir, "planted")); err != nil {
		t.Fatal(err)
	}
	if _, errno := g.OpenFile("planted", experimentalsys.O_RDONLY, 0); errno != experimentalsys.EPERM {
		t.Errorf("open planted link = %v, want EPERM", errno)
	}
	f, errno := g.OpenFile("data", experimentalsys.O_CREAT|experimentalsys.O_RDWR, fs.FileMode(0o600))
	if errno != 0 {
		t.Fatal(errno)
	}
	defer f.Close()
	if n, errno := f.Write([]byte("12345678")); n != 8 || errno != 0 {
		t.Fatalf("write within quota = %d, %v", n, errno)
	}
	if _, errno := f.Write([]byte("abc")); errno != experimentalsys.EIO {
		t.Errorf("write past quota = %v, want EIO", errno)
	}
	if errno := f.Truncate(1 << 30); errno != experimentalsys.EIO {
		t.Errorf("truncate past quota = %v, want EIO", errno)
	}
	if _, errno := f.Pwrite([]byte("xyz"), 100); errno != experimentalsys.EIO {
		t.Errorf("pwrite past quota = %v, want EIO", errno)
	}
}

func TestCollectReturnsOutFilesWithinTheCaps(t *testing.T) {
	w, err := newWorkDir(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer w.remove()
	if err := w.place([]File{{Name: "in.txt", Data: []byte("not returned")}, {Name: "out/a.txt", Data: []byte("aaaa")}, {Name: "out/sub/b.bin", Data: []byte("bbbbbbbb")}, {Name: "out/c.txt", Data: []byte("cc")}}); err != nil {
		t.Fatal(err)
	}
	_ = os.Symlink("/etc/passwd", filepath.Join(w.dir, "out", "link"))
	files, truncated := w.collect(2, 3, 100)
	if !truncated || len(files) != 2 {
		t.Fatalf("files %+v truncated %v, want 2 and truncated", files, truncated)
	}
	if files[0].Name != "out/a.txt" || string(files[0].Data) != "aaa" || !files[0].Truncated || files[0].Size != 4 {
		t.Errorf("first file %+v", files[0])
	}
	if files[1].Name != "out/c.txt" || string(files[1].Data) != "cc" || files[1].Truncated {
		t.Errorf("second file %+v", files[1])
	}
	files, _ = w.collect(10, 100, 5)
	if len(files) != 3 || string(files[0].Data) != "aaaa" || string(files[1].Data) != "c" || files[2].Data != nil || !files[2].Truncated {
		t.Errorf("total cap: %+v", files)
	}
}
