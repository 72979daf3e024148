//go:build linux

package sandbox

import (
	"fmt"
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
}

func (a cowAllocator) Allocate(capacity, maxSize uint64) experimental.LinearMemory {
	if maxSize == 0 {
		maxSize = capacity
	}
	n := min(a.im.size, maxSize)
	buf, err := syscall.Mmap(-1, 0, int(maxSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		buf = make([]byte, maxSize)
		_, _ = a.im.file.ReadAt(buf[:n], a.im.off)
		return &mmapMemory{buf: buf, peak: a.peak, heap: true}
	}
	if _, err := unix.MmapPtr(int(a.im.file.Fd()), a.im.off, unsafe.Pointer(&buf[0]), uintptr(n),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
		// Not mappable (an odd file system): copy instead.
		_, _ = a.im.file.ReadAt(buf[:n], a.im.off)
	}
	return &mmapMemory{buf: buf, peak: a.peak}
}

// newRestoreAllocator maps im into each new instance (nil im: the plain
// reservation of newAllocator).
func newRestoreAllocator(im *memImage, peak *atomic.Uint64) experimental.MemoryAllocator {
	if im == nil || im.file == nil {
		return newAllocator(peak)
	}
	return cowAllocator{im: im, peak: peak}
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
