package quickjs

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"sync/atomic"
)

// maxCheckedBodies bounds how many bodies checkedBodies remembers: 4096
// digests of 32 bytes, with their list and map entries a few hundred KiB.
// A tool definition's body is the same at every call, so a server with
// fewer live script tools than this checks each body once; a caller that
// churns through distinct bodies only evicts digests, and an evicted body
// is checked again at its next call, as every body was before there was
// a cache.
const maxCheckedBodies = 4096

// checkedBodies remembers, per Module, the digests of the bodies checkBody
// passed, least recently used first out. Only passes are kept: a pass is
// a property of the body alone (the compile finished and found it one
// function body), while a failure may also be the VM's (an interrupt, the
// memory or stack limit of that instance), and a failing body fails again
// at every call, with the error of that call; a tool whose body never
// passes cannot run, so its recompile costs nothing a working tool pays.
// It is safe for concurrent use.
type checkedBodies struct {
	mu    sync.Mutex
	order *list.List // of [sha256.Size]byte, most recently used in front
	index map[[sha256.Size]byte]*list.Element
	max   int
	// compiles counts the check's compiles, for tests: a body found here
	// costs none.
	compiles atomic.Int64
}

func newCheckedBodies(maxEntries int) *checkedBodies {
	return &checkedBodies{order: list.New(), index: map[[sha256.Size]byte]*list.Element{}, max: maxEntries}
}

// passed reports whether the body with digest d passed the check before.
func (c *checkedBodies) passed(d [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.index[d]
	if ok {
		c.order.MoveToFront(e)
	}
	return ok
}

// pass remembers that the body with digest d passed the check.
func (c *checkedBodies) pass(d [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.index[d]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.index[d] = c.order.PushFront(d)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.index, last.Value.([sha256.Size]byte))
	}
}

// len is how many digests are kept.
func (c *checkedBodies) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
