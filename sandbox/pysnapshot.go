package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolhost/toolhost/sandbox/internal/wasmedit"
)

// A pySnapshot is one CPython interpreter booted once — the bootstrap's
// imports done, the warm-up compiled — and stopped just before it would wait
// for its first program. It is the interpreter's linear memory (an image in
// a file that every restored instance maps copy-on-write: pages a run never
// writes are never copied), its shadow-stack pointer, and the address of the
// bootstrap's Python functions with their vectorcall entry.
//
// How the template is stopped: CPython is a WASI command, so the template
// runs _start normally with the bootstrap as its -c program. The program's
// last lines write a hand-off line to stdout (the addresses the host needs)
// and register time.time as an exit function; CPython calls it from C while
// finalizing, before tearing anything down, and the host's wall clock blocks
// that call, so the guest sits inside a host call, holding the GIL, with its
// interpreter state complete and no Python frame on its stack. Its memory is copied there. A restored instance is a fresh
// instance of the same compiled module whose memory is that copy, and which
// is entered through the rewritten module's toolhost_call export, three
// times: _prepare (read the program from stdin, compile it into a function),
// that function, _finish (flush, os._exit with the exit code). Each is a call from C with
// no Python frame below it, so the program's stack is its own. The C frames
// the template was blocked in stay in memory, untouched, below the new ones;
// nothing ever returns to them.
//
// What a restored interpreter shares with the template, and so with every
// other run: the string hash seed (so set and dict orders repeat across
// runs; nothing secret derives from it) and object addresses. The random
// module is reseeded from the host's crypto/rand in every run.
type pySnapshot struct {
	memImage        // the linear memory, size bytes (a multiple of 64 KiB)
	sp       uint64 // shadow-stack pointer (global 0)
	// Addresses of the bootstrap's _prepare and _finish function objects,
	// and their vectorcall pointer (an index into table 0), which every
	// Python function shares.
	prepare, finish uint32
	call            uint32
}

// memImage is a linear-memory image that new instances start from: a file
// (a cache file, or a sealed memfd) mapped copy-on-write into each instance
// by the restore allocator, or, where mapping is not available, the bytes,
// which apply copies.
type memImage struct {
	file   *os.File // never written; the image starts at off
	off    int64
	size   uint64
	copied []byte
	// hot are the page ranges of the image a run is expected to write
	// (learnHot): the restore allocator copies them into each new
	// instance ahead of time, so the run does not pay their copy-on-write
	// faults.
	hot []pageRange
}

// pageRange is a run of pages of an image, in bytes from its start.
type pageRange struct{ off, len uint64 }

// close releases the image; instances already mapping it keep their pages.
func (im *memImage) close() {
	if im.file != nil {
		_ = im.file.Close()
	}
}

// Names the rearranged python.wasm exports.
const (
	pyCallExport = "toolhost_call"
	pySPExport   = "toolhost_sp"
)

// rearrangePython makes python.wasm restorable (sandbox/internal/wasmedit):
// python.wasm is a WASI command with no name section (its DWARF addresses
// are zeroed), whose only entry point is _start, so nothing of its insides
// can be called by name. The rearranged module exports toolhost_call, which
// calls a table-0 entry with CPython's vectorcall signature, so the host can
// call a Python function given its address and its vectorcall pointer, both
// read from linear memory; exports global 0, the shadow-stack pointer, as
// toolhost_sp so a snapshot can carry it; and has no data segments, which
// the host writes itself (writeData) into an instance that boots. Custom
// sections (12 MB of DWARF) are dropped: 6.2 MB of module instead of 26.3.
func rearrangePython(wasm []byte) ([]byte, []wasmedit.Segment, error) {
	return wasmedit.Apply(wasm, wasmedit.Edit{Trampoline: pyCallExport, ExportGlobal0: pySPExport})
}

// writeData writes the data segments instantiation would have written.
func writeData(mod api.Module, data []wasmedit.Segment) error {
	for _, d := range data {
		if !mod.Memory().Write(d.Offset, d.Data) {
			return fmt.Errorf("data segment at %d does not fit the memory", d.Offset)
		}
	}
	return nil
}

// snapshotFormat changes whenever the way snapshots are taken or laid out
// does; it is part of the cache key.
const snapshotFormat = "toolhost-python-snapshot-1"

// snapshotHeader is the first page of a cached snapshot file; the image
// follows at imgOffset.
type snapshotHeader struct {
	Format  string `json:"format"`
	Key     string `json:"key"`
	Size    uint64 `json:"size"`
	SP      uint64 `json:"sp"`
	Prepare uint32 `json:"prepare"`
	Finish  uint32 `json:"finish"`
	Call    uint32 `json:"call"`
}

const snapshotImgOffset = 4096

// snapshotKey identifies a snapshot: the runtime's bytes, the bootstrap and
// the format.
func snapshotKey(wasm []byte) string {
	h := sha256.New()
	h.Write([]byte(snapshotFormat + "\x00"))
	h.Write([]byte(pythonBootstrap))
	h.Write([]byte{0})
	h.Write(wasm)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func snapshotPath(dir, key string) string {
	return filepath.Join(dir, "python-"+key+".snapshot")
}

// loadSnapshot opens a cached snapshot; a missing, foreign or truncated
// file is an error and the caller takes a new one.
func loadSnapshot(dir, key string) (*pySnapshot, error) {
	f, err := os.Open(snapshotPath(dir, key))
	if err != nil {
		return nil, err
	}
	head := make([]byte, snapshotImgOffset)
	if _, err := io.ReadFull(f, head); err != nil {
		f.Close()
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	var h snapshotHeader
	if err := json.NewDecoder(bytes.NewReader(bytes.TrimRight(head, "\x00"))).Decode(&h); err != nil {
		f.Close()
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if h.Format != snapshotFormat || h.Key != key || h.Size == 0 || h.Size%65536 != 0 || st.Size() != snapshotImgOffset+int64(h.Size) {
		f.Close()
		return nil, fmt.Errorf("snapshot %s is stale or truncated", f.Name())
	}
	sn := &pySnapshot{memImage: memImage{file: f, off: snapshotImgOffset, size: h.Size}, sp: h.SP, prepare: h.Prepare, finish: h.Finish, call: h.Call}
	if err := sn.load(); err != nil {
		f.Close()
		return nil, err
	}
	return sn, nil
}

// save writes the snapshot into dir atomically (temporary file, rename) and
// switches the snapshot over to the file, so the in-memory copy is freed.
func (sn *pySnapshot) save(dir, key string, mem []byte) error {
	h, _ := json.Marshal(snapshotHeader{Format: snapshotFormat, Key: key, Size: sn.size, SP: sn.sp, Prepare: sn.prepare, Finish: sn.finish, Call: sn.call})
	if len(h) >= snapshotImgOffset {
		return errors.New("snapshot header too long")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "python-*.snapshot.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	head := make([]byte, snapshotImgOffset)
	copy(head, h)
	// A failed write of the memory image was lost here before (the err of
	// the if's own scope): a short snapshot could be renamed into place.
	_, err = tmp.Write(head)
	if err == nil {
		_, err = tmp.Write(mem)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	path := snapshotPath(dir, key)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	return nil
}

// takeSnapshot boots the template interpreter and captures it at the
// hand-off.
func (e *pythonEngine) takeSnapshot(ctx context.Context) (*pySnapshot, []byte, error) {
	s := e.s
	dir, err := newWorkDir(s.cfg.TempDir, int64(s.cfg.WorkDirLimitMiB)<<20)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = dir.remove() }() // best effort: the folder is a temporary one
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()

	handoff := &handoffWriter{seen: make(chan struct{})}
	var armed atomic.Bool
	stopped := make(chan struct{})
	var stopOnce sync.Once
	walltime := func() (int64, int32) {
		if armed.Load() {
			stopOnce.Do(func() { close(stopped) })
			<-tctx.Done()
		}
		t := time.Now()
		return t.Unix(), int32(t.Nanosecond())
	}
	handoff.arm = func() { armed.Store(true) }
	stderr := newCapture()
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(dir.fs(), "/")
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithArgs(pythonArgs("snapshot")...).
		WithStdin(bytes.NewReader(nil)).
		WithStdout(handoff).
		WithStderr(stderr).
		WithFSConfig(fsc).
		WithWalltime(walltime, sys.ClockResolution(1000)).
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithNanosleep(func(ns int64) { sleepCtx(tctx, time.Duration(ns)) })
	mod, err := s.rt.InstantiateModule(experimental.WithMemoryAllocator(tctx, newAllocator(nil)), e.compiled, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("instantiate the template: %w", err)
	}
	defer mod.Close(context.Background())
	if err := writeData(mod, e.data); err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("_start").Call(tctx)
		done <- err
	}()
	select {
	case <-stopped:
	case err := <-done:
		return nil, nil, fmt.Errorf("the template interpreter ended before the hand-off (%v): %s%s", err, stderr.bootText(), handoff.text())
	case <-ctx.Done():
		cancel()
		<-done //nolint:errcheck // the guest ends because it was cancelled; ctx.Err() says so
		return nil, nil, ctx.Err()
	}
	defer func() {
		cancel()
		<-done //nolint:errcheck // waiting for the cancelled guest to end; its error is the cancellation
	}()

	// The guest is parked in the wall clock: its memory is quiet.
	ids, err := handoff.ids()
	if err != nil {
		return nil, nil, err
	}
	spg, ok := mod.ExportedGlobal(pySPExport).(api.MutableGlobal)
	if !ok {
		return nil, nil, errors.New("the module does not export its stack pointer")
	}
	mem := mod.Memory()
	view, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, nil, errors.New("cannot read the template's memory")
	}
	call, err := vectorcall(view, ids)
	if err != nil {
		return nil, nil, err
	}
	img := append([]byte(nil), view...)
	sn := &pySnapshot{memImage: memImage{size: uint64(len(img))}, sp: spg.Get(), prepare: ids.prepare, finish: ids.finish, call: call}
	return sn, img, nil
}

// vectorcall reads from the template's memory the vectorcall pointer of
// the guest's Python functions (prepare, finish and one other must agree),
// after checking that the function type's layout is CPython 3.12's on
// wasm32.
func vectorcall(view []byte, ids handoffIDs) (uint32, error) {
	word := func(addr uint32) (uint32, error) {
		if uint64(addr)+4 > uint64(len(view)) {
			return 0, fmt.Errorf("address %d is outside memory", addr)
		}
		return binary.LittleEndian.Uint32(view[addr:]), nil
	}
	// PyTypeObject on wasm32: ob_refcnt, ob_type, ob_size, tp_name,
	// tp_basicsize (16), tp_itemsize, tp_dealloc, tp_vectorcall_offset (28).
	// The basic size the guest reported checks that layout.
	basic, err := word(ids.funcType + 16)
	if err != nil {
		return 0, err
	}
	if basic != ids.basicSize {
		return 0, fmt.Errorf("function type layout is not CPython 3.12's on wasm32 (basic size %d, guest says %d)", basic, ids.basicSize)
	}
	off, err := word(ids.funcType + 28)
	if err != nil {
		return 0, err
	}
	if off == 0 || off+4 > basic {
		return 0, fmt.Errorf("function objects have no vectorcall slot (offset %d)", off)
	}
	var calls [3]uint32
	for i, fn := range []uint32{ids.prepare, ids.finish, ids.other} {
		if calls[i], err = word(fn + off); err != nil {
			return 0, err
		}
	}
	if calls[0] == 0 || calls[0] != calls[1] || calls[0] != calls[2] {
		return 0, fmt.Errorf("vectorcall pointers disagree (%v)", calls)
	}
	return calls[0], nil
}

// pythonArgs is the interpreter's command line: no site module, no .pyc
// writes, the bootstrap as the program, and what it should do at its end.
func pythonArgs(mode string) []string {
	return []string{"python", "-S", "-B", "-c", pythonBootstrap, mode}
}

// handoffWriter is the template's stdout: it watches for the hand-off line
// "\x00toolhost-handoff <prepare> <finish> <other> <type> <basicsize>\n" and arms
// the wall clock when it is complete.
type handoffWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	arm  func()
	seen chan struct{}
	once sync.Once
	line string
}

const handoffMarker = "\x00toolhost-handoff "

func (h *handoffWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.buf.Len() < 1<<16 {
		h.buf.Write(p)
	}
	b := h.buf.Bytes()
	if i := bytes.Index(b, []byte(handoffMarker)); i >= 0 {
		if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
			h.once.Do(func() {
				h.line = string(b[i+len(handoffMarker) : i+j])
				h.arm()
				close(h.seen)
			})
		}
	}
	return len(p), nil
}

func (h *handoffWriter) text() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.ReplaceAll(h.buf.String(), "\x00", "")
}

type handoffIDs struct{ prepare, finish, other, funcType, basicSize uint32 }

func (h *handoffWriter) ids() (handoffIDs, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := strings.Fields(h.line)
	if len(f) != 5 {
		return handoffIDs{}, fmt.Errorf("bad hand-off line %q", h.line)
	}
	var v [5]uint32
	for i, s := range f {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return handoffIDs{}, fmt.Errorf("bad hand-off line %q", h.line)
		}
		v[i] = uint32(n)
	}
	return handoffIDs{v[0], v[1], v[2], v[3], v[4]}, nil
}
