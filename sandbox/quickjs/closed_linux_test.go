//go:build linux

package quickjs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/experimental"
)

// When the context ends while console.log is in the host, the nested calls
// host_call makes into the guest find the module closed, and wazero frees
// its linear memory there and then. The host function must not return into
// the guest frames that called it: with memory that is unmapped, as the
// sandbox's is, they faulted (a SIGSEGV in compiled code that killed the
// test binary, and would kill a server). The program ends with
// ErrInterrupted instead, and its memory is freed once.
func TestContextEndInsideAHostCallEndsTheProgram(t *testing.T) {
	if !inChild(t) {
		return
	}
	m := sharedModule(t)
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		// end is what the program's first console.log does on the host
		// side: cancel the context, or wait for its deadline.
		end func(ctx context.Context, cancel context.CancelFunc)
	}{
		{"cancelled", time.Minute, func(_ context.Context, cancel context.CancelFunc) { cancel() }},
		{"deadline", 50 * time.Millisecond, func(ctx context.Context, _ context.CancelFunc) { <-ctx.Done() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx context.Context
			var cancel context.CancelFunc
			alloc := &unmappingAllocator{}
			stdout := writerFunc(func(p []byte) (int, error) {
				tc.end(ctx, cancel)
				return len(p), nil
			})
			vm, err := m.Instantiate(experimental.WithMemoryAllocator(context.Background(), alloc), Options{Stdout: stdout})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel = context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			res, err := vm.Eval(ctx, "let n = 0; for (let i = 0; i < 1000; i++) { console.log('x'); n += i } n")
			if !errors.Is(err, ErrInterrupted) {
				t.Errorf("Eval: %+v, %v; want ErrInterrupted", res, err)
			}
			_ = vm.Close(context.Background())
			if n := alloc.frees.Load(); n != 1 {
				t.Errorf("the memory was freed %d times, want once", n)
			}
		})
	}
}

// inChild reports whether the test runs in the child process it starts
// for itself: a regression of the test above is a fault no test survives,
// so the parent runs it there and reports how it ended.
func inChild(t *testing.T) bool {
	t.Helper()
	const env = "QUICKJS_TEST_CHILD"
	if os.Getenv(env) == t.Name() {
		return true
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		if i := bytes.Index(out, []byte("\ngoroutine ")); i > 0 {
			out = out[:i] // the fault and its signal, not every stack
		}
		t.Fatalf("the test failed in its child process (%v):\n%s", err, out)
	}
	return false
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// unmappingAllocator backs a linear memory with its own mapping and unmaps
// it on Free, as the sandbox does: code that touches the memory after
// that faults rather than reading a stale Go slice.
type unmappingAllocator struct{ frees atomic.Int32 }

func (a *unmappingAllocator) Allocate(capacity, maxSize uint64) experimental.LinearMemory {
	if maxSize == 0 {
		maxSize = capacity
	}
	buf, err := syscall.Mmap(-1, 0, int(maxSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		panic(err)
	}
	return &unmappedMemory{buf: buf, frees: &a.frees}
}

type unmappedMemory struct {
	buf   []byte
	frees *atomic.Int32
}

func (m *unmappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size]
}

func (m *unmappedMemory) Free() {
	m.frees.Add(1)
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}
