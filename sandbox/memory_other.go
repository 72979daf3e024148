//go:build !linux

package sandbox

import (
	"context"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// newAllocator returns nil elsewhere: wazero's default allocator is used.
func newAllocator(*atomic.Uint64) experimental.MemoryAllocator { return nil }

// withInstanceMemory: wazero's default allocator; the image is copied
// (load read it, so nothing here can fail). stop releases the context.
func withInstanceMemory(ctx context.Context, _ *memImage, _ *atomic.Uint64) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	return ctx, cancel
}

// load reads an image opened from a file into memory.
func (im *memImage) load() error {
	b := make([]byte, im.size)
	if _, err := im.file.ReadAt(b, im.off); err != nil {
		return err
	}
	im.copied = b
	return nil
}

// newMemImage keeps image bytes in memory.
func newMemImage(img []byte) (memImage, error) {
	return memImage{copied: img, size: uint64(len(img))}, nil
}

// residentKiB is not measured here; pools assume defaultInstanceKiB.
func residentKiB() (int64, bool) { return 0, false }

// learnHot has nothing to learn: images are copied, never mapped.
func (im *memImage) learnHot(context.Context, func(context.Context) (func(), error)) error {
	return nil
}
