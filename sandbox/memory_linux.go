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

func (a mmapAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	if max == 0 {
		max = capacity
	}
	buf, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		// Out of address space is unlikely on 64-bit hosts; fall back to a
		// Go slice rather than failing the instantiation.
		return &mmapMemory{buf: make([]byte, max), peak: a.peak, heap: true}
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

// cowAllocator maps a Python snapshot's image privately at the start of a
// fresh reservation: the instance starts with the template's memory, reads
// share the image's pages with every other instance, and a page is copied
// only when the instance writes it.
type cowAllocator struct {
	sn   *pySnapshot
	peak *atomic.Uint64
}

func (a cowAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	if max == 0 {
		max = capacity
	}
	n := min(a.sn.size, max)
	buf, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		buf = make([]byte, max)
		_, _ = a.sn.img.ReadAt(buf[:n], a.sn.imgOff)
		return &mmapMemory{buf: buf, peak: a.peak, heap: true}
	}
	if _, err := unix.MmapPtr(int(a.sn.img.Fd()), a.sn.imgOff, unsafe.Pointer(&buf[0]), uintptr(n),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
		// Not mappable (an odd file system): copy instead.
		_, _ = a.sn.img.ReadAt(buf[:n], a.sn.imgOff)
	}
	return &mmapMemory{buf: buf, peak: a.peak}
}

func newRestoreAllocator(sn *pySnapshot, peak *atomic.Uint64) experimental.MemoryAllocator {
	return cowAllocator{sn: sn, peak: peak}
}

// load readies a snapshot loaded from a file: nothing to do here, the
// file is mapped per instance.
func (sn *pySnapshot) load() error { return nil }

// newSnapshotImage puts a freshly taken image where instances can map it:
// an anonymous, sealed memory file.
func newSnapshotImage(sn *pySnapshot, img []byte) error {
	fd, err := unix.MemfdCreate("toolhost-python-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "toolhost-python-snapshot")
	if _, err := f.Write(img); err != nil {
		f.Close()
		return fmt.Errorf("memfd: %w", err)
	}
	_, _ = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL)
	sn.img, sn.imgOff = f, 0
	return nil
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
