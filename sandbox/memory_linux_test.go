//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tetratelabs/wazero"
)

var errInjected = errors.New("injected read failure")

// readStep is one ReadAt answer of a stepReader.
type readStep struct {
	n     int   // image bytes delivered, capped by what was asked and what is left; all: -1
	err   error // returned with them
	count int   // when not 0, returned instead of the number delivered: a broken reader
}

// stepReader is an io.ReaderAt over src that answers its calls from steps
// and, once they run out, as bytes.Reader would. Whenever it returns an
// error it also scribbles over the rest of the buffer, as a reader may.
type stepReader struct {
	src   []byte
	steps []readStep
	calls int
	most  int // reads a caller that stops at an error or EOF can make
	// broke says an answer broke the contract or failed: a read may then
	// fail however much of the image there is.
	broke bool
}

func newStepReader(src []byte, steps []readStep) *stepReader {
	return &stepReader{src: src, steps: steps, most: len(steps) + 1}
}

func (r *stepReader) ReadAt(p []byte, off int64) (int, error) {
	r.calls++
	if r.calls > r.most {
		// Past its steps, one read gives all there is or io.EOF.
		panic(fmt.Sprintf("read %d after an error, an EOF or the last byte", r.calls))
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	var left []byte
	if off < int64(len(r.src)) {
		left = r.src[off:]
	}
	if len(r.steps) == 0 {
		n := copy(p, left)
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	st := r.steps[0]
	r.steps = r.steps[1:]
	n := len(p)
	if st.n >= 0 {
		n = min(n, st.n)
	}
	n = copy(p[:n], left)
	if st.err != nil {
		for i := n; i < len(p); i++ {
			p[i] = 0xEE
		}
	}
	count := n
	if st.count != 0 {
		count = st.count
	}
	r.broke = r.broke || st.count != 0 || n < len(p) && st.err == nil ||
		st.err != nil && (!errors.Is(st.err, io.EOF) || n < len(left)) // an EOF before the end
	return count, st.err
}

func TestReadImage(t *testing.T) {
	page := int(pageSize)
	src := make([]byte, 3*page)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	cases := []struct {
		name    string
		size    int
		steps   []readStep
		wantErr error // nil: the image, read in full
		reads   int
	}{
		{"whole image in one read", 2 * page, nil, nil, 1},
		{"EOF with the last byte", 2 * page, []readStep{{n: -1, err: io.EOF}}, nil, 1},
		{"EOF mid-page", 3 * page, []readStep{{n: page + page/2, err: io.EOF}}, io.ErrUnexpectedEOF, 1},
		{"image shorter than asked", 3*page + 10, nil, io.ErrUnexpectedEOF, 1},
		{"error on first read", 2 * page, []readStep{{n: 0, err: errInjected}}, errInjected, 1},
		{"error with part of a page", 2 * page, []readStep{{n: 100, err: errInjected}}, errInjected, 1},
		{"short read then success", 2 * page, []readStep{{n: page / 2}}, nil, 2},
		{"short reads a byte at a time", 5, []readStep{{n: 1}, {n: 1}, {n: 1}, {n: 1}, {n: 1}}, nil, 5},
		{"short read then error", 2 * page, []readStep{{n: page}, {n: 0, err: errInjected}}, errInjected, 2},
		{"short read then EOF mid-page", 3 * page, []readStep{{n: page}, {n: page / 2, err: io.EOF}}, io.ErrUnexpectedEOF, 2},
		{"nothing and no error", 2 * page, []readStep{{n: page}, {n: 0}}, io.ErrNoProgress, 2},
		{"error with every byte", 2 * page, []readStep{{n: -1, err: errInjected}}, errInjected, 1},
		{"count above what was asked", 2 * page, []readStep{{n: -1, count: 2*page + 1}}, errBogusCount, 1},
		{"negative count", 2 * page, []readStep{{n: 0, count: -1}}, errBogusCount, 1},
		{"nothing to read", 0, []readStep{{n: 0, err: errInjected}}, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newStepReader(src, c.steps)
			dst := bytes.Repeat([]byte{0x5A}, c.size)
			err := readImage(dst, r, 0)
			if r.calls != c.reads {
				t.Errorf("%d reads, want %d", r.calls, c.reads)
			}
			switch {
			case c.wantErr == nil && err != nil:
				t.Fatalf("error %v, want the image", err)
			case c.wantErr == nil && !bytes.Equal(dst, src[:c.size]):
				t.Fatal("no error, but the memory is not the image")
			case c.wantErr == nil:
			case c.wantErr == errBogusCount && (err == nil || errors.Is(err, errInjected)):
				t.Fatalf("error %v, want one about the count", err)
			case c.wantErr != errBogusCount && !errors.Is(err, c.wantErr):
				t.Fatalf("error %v, want %v", err, c.wantErr)
			case !allZero(dst):
				t.Fatal("failed, but the memory still holds bytes of the read")
			}
		})
	}
}

// errBogusCount stands for readImage's own error about a count that cannot
// be, which has no sentinel.
var errBogusCount = errors.New("a count that cannot be")

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// FuzzReadImage drives the copy of an image that cannot be mapped with any
// image, offset and size, through a reader that fails, ends or returns
// short (with or without an error, or with a count that cannot be) where
// script says. Either the memory is exactly the image's bytes, or there is
// an error and the memory is all zeros: never part of the image in silence.
func FuzzReadImage(f *testing.F) {
	img := make([]byte, 300)
	for i := range img {
		img[i] = byte(i) | 1
	}
	f.Add(img, int64(0), uint16(300), []byte{})                   // honest, the whole image
	f.Add(img, int64(17), uint16(200), []byte{0})                 // honest, inside it
	f.Add(img, int64(100), uint16(250), []byte{})                 // past its end: EOF mid-way
	f.Add(img, int64(0), uint16(300), []byte{1 | 9<<3, 0})        // short with no error, then the rest
	f.Add(img, int64(0), uint16(300), []byte{1 | 0<<3})           // nothing and no error
	f.Add(img, int64(5), uint16(100), []byte{2 | 3<<3})           // short with an error
	f.Add(img, int64(0), uint16(300), []byte{1 | 4<<3, 2 | 0<<3}) // short, then an error
	f.Add(img, int64(0), uint16(300), []byte{3})                  // everything, with EOF
	f.Add(img, int64(0), uint16(64), []byte{4, 4 | 1<<3})         // counts that cannot be
	f.Add(img, int64(-1), uint16(10), []byte{})                   // negative offset
	f.Add(img, int64(1<<62), uint16(10), []byte{})                // far past the end
	f.Add([]byte{}, int64(0), uint16(0), []byte{2})               // nothing to read
	f.Fuzz(func(t *testing.T, src []byte, off int64, size uint16, script []byte) {
		r := newStepReader(src, decodeSteps(script))
		dst := bytes.Repeat([]byte{0x5A}, int(size))
		err := readImage(dst, r, off)
		// Nothing to read is read wherever it is.
		inside := size == 0 || off >= 0 && off <= int64(len(src)) && int64(size) <= int64(len(src))-off
		switch {
		case err == nil && !inside:
			t.Fatalf("no error reading %d bytes at %d of a %d-byte image", size, off, len(src))
		case err == nil && size > 0 && !bytes.Equal(dst, src[off:off+int64(size)]):
			t.Fatal("no error, but the memory is not the image")
		case err != nil && !allZero(dst):
			t.Fatalf("error %v, but the memory still holds bytes of the read", err)
		case err != nil && inside && !r.broke:
			t.Fatalf("error %v from a reader that kept its contract over the image", err)
		}
	})
}

// decodeSteps reads one step a byte: the low 3 bits choose the answer,
// the rest of the byte its length.
func decodeSteps(script []byte) []readStep {
	steps := make([]readStep, 0, len(script))
	for _, b := range script {
		n := int(b >> 3)
		var st readStep
		switch b & 7 {
		case 0, 5:
			st = readStep{n: -1}
		case 1:
			st = readStep{n: n}
		case 2:
			st = readStep{n: n, err: errInjected}
		case 3:
			st = readStep{n: -1, err: io.EOF}
		case 4:
			st = readStep{n: n, count: -1 - n} // a count below zero
		case 6:
			st = readStep{n: -1, count: 1 << 20} // above anything asked
		case 7:
			st = readStep{n: n, err: io.EOF}
		}
		steps = append(steps, st)
	}
	return steps
}

// imageFile writes img into a file at off and returns it opened.
func imageFile(t *testing.T, img []byte, off int64) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "image")
	if err := os.WriteFile(path, append(make([]byte, off), img...), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestInstanceMemoryCopiesWhatCannotBeMapped: an image at an offset off a
// page boundary cannot be mapped, and the restore allocator copies it; one
// that cannot be read in full (a file shorter than its image, a directory)
// cancels the instantiation's context with the read's error as its cause
// and leaves zeros, never part of the image.
func TestInstanceMemoryCopiesWhatCannotBeMapped(t *testing.T) {
	const size = 3 * 65536
	img := make([]byte, size)
	for i := range img {
		img[i] = byte(i>>12) | 1
	}
	cases := []struct {
		name    string
		file    func(t *testing.T) *os.File
		wantErr error
	}{
		{"unaligned offset", func(t *testing.T) *os.File { return imageFile(t, img, 1) }, nil},
		{"file ends mid-page", func(t *testing.T) *os.File { return imageFile(t, img[:size-5000], 1) }, io.ErrUnexpectedEOF},
		{"directory", func(t *testing.T) *os.File {
			d, err := os.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d
		}, syscall.EISDIR},
	}
	rctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(rctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	defer rt.Close(rctx)
	compiled, err := rt.CompileModule(rctx, threePageModule)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			im := &memImage{file: c.file(t), off: 1, size: size}
			ctx, stop := withInstanceMemory(rctx, im, nil)
			defer stop()
			mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close(rctx)
			view, _ := mod.Memory().Read(0, size)
			buf := bytes.Clone(view) // a failed call closes the module and unmaps its memory
			cause := context.Cause(ctx)
			_, callErr := mod.ExportedFunction("first").Call(ctx)
			switch {
			case c.wantErr == nil && cause != nil:
				t.Fatalf("cause %v, want none", cause)
			case c.wantErr == nil && !bytes.Equal(buf, img):
				t.Fatal("the memory is not the image")
			case c.wantErr == nil && callErr != nil:
				t.Fatalf("call: %v", callErr)
			case c.wantErr == nil:
			case !errors.Is(cause, c.wantErr):
				t.Fatalf("cause %v, want %v", cause, c.wantErr)
			case !allZero(buf):
				t.Fatal("the memory holds part of the image")
			case callErr == nil:
				t.Fatal("the instance ran code on memory that is not the image")
			}
		})
	}
}

// threePageModule is a WebAssembly module with a memory of 3 pages (at
// most 6) and a function, first, that loads its first word.
var threePageModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
	0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type: () -> i32
	0x03, 0x02, 0x01, 0x00, // function 0 has type 0
	0x05, 0x04, 0x01, 0x01, 0x03, 0x06, // memory: min 3, max 6
	0x07, 0x09, 0x01, 0x05, 'f', 'i', 'r', 's', 't', 0x00, 0x00, // export "first"
	0x0a, 0x09, 0x01, 0x07, 0x00, 0x41, 0x00, 0x28, 0x02, 0x00, 0x0b, // i32.load (i32.const 0)
}

// TestEnginesStartFromAnImageTheyMustCopy: with its snapshot image at an
// offset that cannot be mapped, each engine's instances start from a copy
// and run; with an image file that ends mid-page, the start fails with the
// read's error, and nothing panics.
func TestEnginesStartFromAnImageTheyMustCopy(t *testing.T) {
	s := newTestSandbox(t, Config{PythonPool: -1, JavaScriptPool: -1})
	ctx := context.Background()
	py := s.py.snap
	if py == nil || py.file == nil {
		t.Fatalf("no Python snapshot in a file: %v", s.py.snapErr)
	}
	pyImg := make([]byte, py.size)
	if err := readImage(pyImg, py.file, py.off); err != nil {
		t.Fatal(err)
	}
	jsImg := s.js.mod.SnapshotImage()
	cases := []struct {
		name    string
		cut     int // bytes missing at the end of the file
		wantErr error
	}{
		{"whole image", 0, nil},
		{"file ends mid-page", 5000, io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		t.Run("JavaScript/"+c.name, func(t *testing.T) {
			f := imageFile(t, jsImg[:len(jsImg)-c.cut], 1)
			e := &jsEngine{s: s, mod: s.js.mod, image: memImage{file: f, off: 1, size: uint64(len(jsImg))}}
			j, err := e.start(ctx)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("start: %v, want %v", err, c.wantErr)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer j.close()
			res, err := j.vm.Eval(ctx, "6 * 7")
			if err != nil || string(res.Value) != "42" {
				t.Fatalf("6 * 7: %v %+v", err, res)
			}
		})
		t.Run("Python/"+c.name, func(t *testing.T) {
			f := imageFile(t, pyImg[:len(pyImg)-c.cut], 1)
			sn := &pySnapshot{memImage: memImage{file: f, off: 1, size: py.size}, sp: py.sp, prepare: py.prepare, finish: py.finish, call: py.call}
			err := s.py.check(ctx, sn) // starts an instance from sn and runs a program in it
			if c.wantErr == nil && err != nil || c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Fatalf("a run from the copied image: %v, want %v", err, c.wantErr)
			}
			if err != nil {
				t.Log(err)
			}
		})
	}
}
