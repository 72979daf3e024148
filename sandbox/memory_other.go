//go:build !linux

package sandbox

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// newAllocator returns nil elsewhere: wazero's default allocator is used.
func newAllocator(*atomic.Uint64) experimental.MemoryAllocator { return nil }
