//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// TestJavaScriptInstancesStartWithTheirHotPagesCopied: the engine learned
// which snapshot pages a run writes, and every instance the restore
// allocator maps already holds its own copy of each of them — with the
// snapshot's bytes unchanged — so a run does not pay those copy-on-write
// faults. A run in such an instance still gives the right answer.
func TestJavaScriptInstancesStartWithTheirHotPagesCopied(t *testing.T) {
	s := newTestSandbox(t, Config{})
	im := &s.js.image
	if im.file == nil {
		t.Fatal("the JavaScript snapshot is not in a memfd: instances copy it")
	}
	if len(im.hot) == 0 {
		t.Fatal("no hot pages learned")
	}
	pages := uint64(0)
	for _, r := range im.hot {
		if r.off%pageSize != 0 || r.len == 0 || r.off+r.len > im.size {
			t.Fatalf("bad range %+v in an image of %d bytes", r, im.size)
		}
		pages += r.len / pageSize
	}
	// A handful of pages, not the whole image: the rest stays shared.
	if pages*pageSize >= im.size/2 {
		t.Errorf("%d hot pages of %d: most of the image would be copied", pages, im.size/pageSize)
	}

	mem := cowAllocator{im: im}.Allocate(im.size, im.size+64<<10).(*mmapMemory)
	defer mem.Free()
	private, err := privatePages(mem.buf[:im.size])
	if err != nil {
		t.Fatal(err)
	}
	if !sameRanges(private, im.hot) {
		t.Errorf("private pages of a fresh instance %v, want the hot ones %v", private, im.hot)
	}
	if !bytes.Equal(mem.buf[:im.size], s.js.mod.SnapshotImage()) {
		t.Error("pre-copying changed the instance's memory")
	}

	res, err := s.Run(context.Background(), Request{Language: JavaScript, Code: hotProbe, Args: json.RawMessage(`{"n":1}`)})
	if err != nil || res.ExitCode != 0 || string(res.Value) != `{"ok":true,"n":1}` || string(res.Stdout) != "1\n" {
		t.Fatalf("probe program: %v %+v", err, res)
	}
}

func sameRanges(a, b []pageRange) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
