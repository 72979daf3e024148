//go:build !linux

package sandbox

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// newAllocator returns nil elsewhere: wazero's default allocator is used.
func newAllocator(*atomic.Uint64) experimental.MemoryAllocator { return nil }

// newRestoreAllocator: wazero's default allocator; apply copies the image.
func newRestoreAllocator(*pySnapshot, *atomic.Uint64) experimental.MemoryAllocator { return nil }

// load reads a snapshot loaded from a file into memory.
func (sn *pySnapshot) load() error {
	b := make([]byte, sn.size)
	if _, err := sn.img.ReadAt(b, sn.imgOff); err != nil {
		return err
	}
	sn.copied = b
	return nil
}

// newSnapshotImage keeps a freshly taken image in memory.
func newSnapshotImage(sn *pySnapshot, img []byte) error {
	sn.copied = img
	return nil
}

// residentKiB is not measured here; pools assume defaultInstanceKiB.
func residentKiB() (int64, bool) { return 0, false }
