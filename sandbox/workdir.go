package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// workDir is one run's private working directory: a fresh host temporary
// directory mounted at "/" in the guest and removed after the run.
type workDir struct {
	dir     string
	written atomic.Int64 // bytes the guest wrote, against quota
	quota   int64
}

func newWorkDir(parent string, quota int64) (*workDir, error) {
	dir, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		return nil, fmt.Errorf("create working directory: %w", err)
	}
	// out/ exists from the start: the tool promises that files written
	// there come back, so open("out/x", "w") must work without a mkdir.
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("create working directory: %w", err)
	}
	return &workDir{dir: dir, quota: quota}, nil
}

// fs is the file system the guest sees. Links are refused: the host follows
// a symlink the guest created ("x" -> "../../etc/passwd") when the guest opens
// it, which would leave the directory. Writes are counted against the quota
// so a guest cannot fill the host's disk; past it writes fail with EIO
// (WASI has no ENOSPC in wazero's errno set).
func (w *workDir) fs() experimentalsys.FS {
	return &guardedFS{FS: sysfs.DirFS(w.dir), w: w}
}

func (w *workDir) remove() error { return os.RemoveAll(w.dir) }

// ValidFileName reports whether name is an acceptable input file name: a
// relative slash-separated path without "." or ".." elements, at most 8 deep.
func ValidFileName(name string) error {
	if name == "" || len(name) > 255 {
		return errors.New("file name must be 1 to 255 bytes")
	}
	if strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || strings.ContainsRune(name, 0) {
		return fmt.Errorf("file name %q must be a relative path with / separators", name)
	}
	parts := strings.Split(name, "/")
	if len(parts) > 8 {
		return fmt.Errorf("file name %q is nested too deep (at most 8 levels)", name)
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return fmt.Errorf("file name %q must not contain empty, . or .. elements", name)
		}
	}
	return nil
}

// place writes the run's input files into the directory.
func (w *workDir) place(files []File) error {
	for _, f := range files {
		if err := ValidFileName(f.Name); err != nil {
			return err
		}
		p := filepath.Join(w.dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("place %s: %w", f.Name, err)
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			return fmt.Errorf("place %s: %w", f.Name, err)
		}
	}
	return nil
}

// collect reads the regular files under out/, in name order, within the caps:
// at most maxFiles files, each file's content cut at perFile bytes, and
// contents dropped (name and size kept) once total bytes were returned.
func (w *workDir) collect(maxFiles int, perFile, total int64) (files []OutFile, truncated bool) {
	root := filepath.Join(w.dir, "out")
	var names []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(w.dir, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(names)
	if len(names) > maxFiles {
		names, truncated = names[:maxFiles], true
	}
	var used int64
	for _, n := range names {
		p := filepath.Join(w.dir, filepath.FromSlash(n))
		// Lstat again: only regular files, never whatever a name points to.
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		of := OutFile{Name: n, Size: st.Size()}
		budget := min(perFile, total-used)
		if budget > 0 {
			f, err := os.Open(p)
			if err == nil {
				buf := make([]byte, min(st.Size(), budget))
				k, _ := f.ReadAt(buf, 0)
				_ = f.Close()
				of.Data = buf[:k]
				used += int64(k)
			}
		}
		of.Truncated = int64(len(of.Data)) < of.Size
		if of.Truncated {
			truncated = true
		}
		files = append(files, of)
	}
	return files, truncated
}

// guardedFS is the guest's view of a workDir.
type guardedFS struct {
	experimentalsys.FS
	w *workDir
}

func (g *guardedFS) Link(string, string) experimentalsys.Errno    { return experimentalsys.EPERM }
func (g *guardedFS) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }

func (g *guardedFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if flag&experimentalsys.O_NOFOLLOW == 0 {
		// Nothing in the directory can be a link (we refuse to make them),
		// but refuse to follow one anyway if the host put one there.
		if st, errno := g.FS.Lstat(p); errno == 0 && st.Mode&fs.ModeSymlink != 0 {
			return nil, experimentalsys.EPERM
		}
	}
	f, errno := g.FS.OpenFile(p, flag, perm)
	if errno != 0 {
		return nil, errno
	}
	return &quotaFile{File: f, w: g.w}, 0
}

func (g *guardedFS) Rename(from, to string) experimentalsys.Errno {
	if path.Clean("/"+from) == "/" || path.Clean("/"+to) == "/" {
		return experimentalsys.EPERM
	}
	return g.FS.Rename(from, to)
}

// quotaFile counts every byte written (and every byte a truncate grows a
// file by) against the run's quota. Counting writes rather than current
// sizes over-counts rewrites, which only errs on the safe side.
type quotaFile struct {
	experimentalsys.File
	w *workDir
}

func (f *quotaFile) charge(n int64) bool {
	if f.w.written.Add(n) > f.w.quota {
		f.w.written.Add(-n)
		return false
	}
	return true
}

func (f *quotaFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if !f.charge(int64(len(buf))) {
		return 0, experimentalsys.EIO
	}
	return f.File.Write(buf)
}

func (f *quotaFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if !f.charge(int64(len(buf))) {
		return 0, experimentalsys.EIO
	}
	return f.File.Pwrite(buf, off)
}

func (f *quotaFile) Truncate(size int64) experimentalsys.Errno {
	st, errno := f.File.Stat()
	if errno != 0 {
		return errno
	}
	if grow := size - st.Size; grow > 0 && !f.charge(grow) {
		return experimentalsys.EIO
	}
	return f.File.Truncate(size)
}
