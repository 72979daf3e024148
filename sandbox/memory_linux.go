//go:build linux

package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapAllocator backs each linear memory with its own anonymous mapping of
// the maximum size, reserved but not committed: pages cost RSS only once the
// guest touches them, growing never copies, and Free hands everything back to
// the kernel at once. Without it wazero grows memory by copying into a larger
// Go slice, and a 256 MiB guest can leave the Go heap above a gigabyte.
type mmapAllocator struct {
	peak *atomic.Uint64 // largest size the guest asked for, for diagnosis
}

func (a mmapAllocator) Allocate(capacity, maxSize uint64) experimental.LinearMemory {
	if maxSize == 0 {
		maxSize = capacity
	}
	buf, err := syscall.Mmap(-1, 0, int(maxSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		// Out of address space is unlikely on 64-bit hosts; fall back to a
		// Go slice rather than failing the instantiation.
		return &mmapMemory{buf: make([]byte, maxSize), peak: a.peak, heap: true}
	}
	return &mmapMemory{buf: buf, peak: a.peak}
}

type mmapMemory struct {
	buf  []byte
	peak *atomic.Uint64
	heap bool // buf came from make, not mmap
}

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	if m.peak != nil {
		for {
			p := m.peak.Load()
			if size <= p || m.peak.CompareAndSwap(p, size) {
				break
			}
		}
	}
	return m.buf[:size]
}

func (m *mmapMemory) Free() {
	if m.buf != nil && !m.heap {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}

func newAllocator(peak *atomic.Uint64) experimental.MemoryAllocator {
	return mmapAllocator{peak: peak}
}

// cowAllocator maps an image privately at the start of a fresh
// reservation: the instance starts with the template's memory, reads share
// the image's pages with every other instance, and a page is copied only
// when the instance writes it.
type cowAllocator struct {
	im   *memImage
	peak *atomic.Uint64
	// failed hears why the image could not be copied into a new memory:
	// Allocate has no error to return, and the instance must not run.
	// withInstanceMemory makes it cancel the instantiation's context.
	failed func(error)
}

func (a cowAllocator) Allocate(capacity, maxSize uint64) experimental.LinearMemory {
	if maxSize == 0 {
		maxSize = capacity
	}
	n := min(a.im.size, maxSize)
	buf, err := syscall.Mmap(-1, 0, int(maxSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		buf = make([]byte, maxSize)
		a.copyImage(buf[:n])
		return &mmapMemory{buf: buf, peak: a.peak, heap: true}
	}
	if _, err := unix.MmapPtr(int(a.im.file.Fd()), a.im.off, unsafe.Pointer(&buf[0]), uintptr(n),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
		// Not mappable (an odd file system, an offset off a page
		// boundary): copy instead.
		a.copyImage(buf[:n])
	} else {
		prefault(buf[:n], a.im.hot)
	}
	return &mmapMemory{buf: buf, peak: a.peak}
}

// copyImage fills dst with the image where it cannot be mapped, and tells
// a.failed when it cannot: dst is then all zeros, never part of the image.
func (a cowAllocator) copyImage(dst []byte) {
	if err := readImage(dst, a.im.file, a.im.off); err != nil {
		a.failed(fmt.Errorf("restore an instance's memory: %w", err))
	}
}

// readImage reads len(dst) bytes at off from r into dst, all of them or an
// error: r failing, the image ending early (io.ErrUnexpectedEOF), or a count
// that is not one (below zero, or above what was asked). A short read with
// no error breaks the io.ReaderAt contract; the rest is asked for again,
// and a read that brings nothing and says nothing is io.ErrNoProgress. On
// an error dst is cleared: a reader may have written into it past the count
// it returned.
func readImage(dst []byte, r io.ReaderAt, off int64) error {
	for done := 0; done < len(dst); {
		n, err := r.ReadAt(dst[done:], off+int64(done))
		if n < 0 || n > len(dst)-done {
			err = fmt.Errorf("read at %d returned %d bytes of %d", off+int64(done), n, len(dst)-done)
			n = 0
		}
		done += n
		switch {
		case err == nil && n == 0:
			err = io.ErrNoProgress
		case err == nil, errors.Is(err, io.EOF) && done == len(dst):
			continue
		case errors.Is(err, io.EOF):
			err = io.ErrUnexpectedEOF
		}
		clear(dst)
		return fmt.Errorf("read the image at %d (byte %d of %d): %w", off+int64(done), done, len(dst), err)
	}
	return nil
}

// prefault copies the hot pages of a fresh mapping now, as a write would:
// where the instance is started (a warm pool's goroutine) rather than in
// the run, where each copy-on-write fault cost about 25 µs on a 2-core VM
// (43 of them for a trivial JavaScript program: 1.7 → 0.64 ms for its
// eval). The contents do not change.
func prefault(buf []byte, hot []pageRange) {
	for _, r := range hot {
		if r.off+r.len > uint64(len(buf)) {
			continue
		}
		page := buf[r.off : r.off+r.len]
		if unix.Madvise(page, unix.MADV_POPULATE_WRITE) == nil {
			continue
		}
		// Before Linux 5.14: write each page's first word back to itself;
		// an atomic add of zero is a write the compiler cannot drop.
		for p := uint64(0); p < r.len; p += pageSize {
			atomic.AddUint32((*uint32)(unsafe.Pointer(&page[p])), 0)
		}
	}
}

var pageSize = uint64(os.Getpagesize())

// learnHot finds the pages of im a run writes: start makes one instance
// with the allocator in the context it is given, runs a representative
// program in it and returns what closes it; before closing it, learnHot
// reads from /proc/self/pagemap which of the image's pages the instance
// now holds a private copy of. Those become im.hot.
func (im *memImage) learnHot(ctx context.Context, start func(context.Context) (func(), error)) error {
	if im.file == nil {
		return nil
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var mem *mmapMemory
	closeVM, err := start(experimental.WithMemoryAllocator(ctx, capturingAllocator{cowAllocator{im: im, failed: stop}, &mem}))
	if cause := context.Cause(ctx); cause != nil {
		if err == nil {
			closeVM()
		}
		return cause
	}
	if err != nil {
		return err
	}
	defer closeVM()
	if mem == nil || mem.heap {
		return errors.New("the instance's memory is not a mapping")
	}
	hot, err := privatePages(mem.buf[:min(im.size, uint64(len(mem.buf)))])
	if err != nil {
		return err
	}
	im.hot = hot
	return nil
}

// capturingAllocator hands out its allocator's memory and keeps it, so
// learnHot can look at the instance's pages.
type capturingAllocator struct {
	cowAllocator
	got **mmapMemory
}

func (a capturingAllocator) Allocate(capacity, maxSize uint64) experimental.LinearMemory {
	m := a.cowAllocator.Allocate(capacity, maxSize).(*mmapMemory)
	*a.got = m
	return m
}

// privatePages returns the pages of the private file mapping buf that the
// process has written (copied on write): /proc/self/pagemap marks them
// present (bit 63) and no longer file pages (bit 61 clear). Flags are
// readable without privileges. Adjacent pages make one range.
func privatePages(buf []byte) ([]pageRange, error) {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n := len(buf) / int(pageSize)
	entries := make([]byte, 8*n)
	base := uintptr(unsafe.Pointer(&buf[0]))
	if _, err := f.ReadAt(entries, int64(base/uintptr(pageSize)*8)); err != nil {
		return nil, fmt.Errorf("pagemap: %w", err)
	}
	var hot []pageRange
	for i := range n {
		e := binary.LittleEndian.Uint64(entries[8*i:])
		if e>>63&1 == 0 || e>>61&1 == 1 {
			continue
		}
		off := uint64(i) * pageSize
		if k := len(hot) - 1; k >= 0 && hot[k].off+hot[k].len == off {
			hot[k].len += pageSize
		} else {
			hot = append(hot, pageRange{off: off, len: pageSize})
		}
	}
	return hot, nil
}

// withInstanceMemory returns ctx carrying the memory allocator of a new
// instance: im mapped copy-on-write (or copied), or with a nil im (or one
// not in a file) the plain reservation of newAllocator. Allocate has no
// error to return, so an image that cannot be read cancels the returned
// context with the error as its cause: the runtime (WithCloseOnContextDone)
// closes the instance at its first call, so none of its code runs on
// memory that is not the image, and the caller, which checks
// context.Cause once the instance is made, fails the start with it. stop
// releases the context once the instance is made.
func withInstanceMemory(ctx context.Context, im *memImage, peak *atomic.Uint64) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop = func() { cancel(nil) }
	if im == nil || im.file == nil {
		return experimental.WithMemoryAllocator(ctx, newAllocator(peak)), stop
	}
	return experimental.WithMemoryAllocator(ctx, cowAllocator{im: im, peak: peak, failed: cancel}), stop
}

// load readies an image opened from a file: nothing to do here, the file
// is mapped per instance.
func (im *memImage) load() error { return nil }

// newMemImage puts image bytes where instances can map them: an
// anonymous, sealed memory file.
func newMemImage(img []byte) (memImage, error) {
	fd, err := unix.MemfdCreate("toolhost-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return memImage{}, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "toolhost-image")
	if _, err := f.Write(img); err != nil {
		f.Close()
		return memImage{}, fmt.Errorf("memfd: %w", err)
	}
	_, _ = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL)
	return memImage{file: f, size: uint64(len(img))}, nil
}

// residentKiB is the process's proportional set size: private pages in full,
// shared ones (a snapshot image mapped by many instances) divided among
// their mappers.
func residentKiB() (int64, bool) {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "Pss:" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
