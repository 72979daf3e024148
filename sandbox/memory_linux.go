//go:build linux

package sandbox

import (
	"sync/atomic"
	"syscall"

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
