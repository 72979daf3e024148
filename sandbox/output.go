package sandbox

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// capture is an io.Writer handed to a guest as stdout or stderr. It keeps the
// first limit bytes and counts the rest, so a flood costs no memory: the cap
// holds while the guest writes. Before a run is attached (a pooled instance
// booting) writes go to a small boot buffer kept for diagnosis.
//
// When marker is set, capture also watches for it: the Python bootstrap ends
// a run by writing marker + status line, which is not the program's output.
type capture struct {
	mu        sync.Mutex
	limit     int
	buf       bytes.Buffer
	total     int64
	attached  bool
	boot      bytes.Buffer
	marker    []byte
	pending   []byte // bytes held back because they may start the marker
	status    []byte // what followed the marker, up to a newline
	statusEnd bool
	done      chan struct{} // closed once the status line is complete
}

func newCapture() *capture { return &capture{done: make(chan struct{})} }

// attach starts a run: output from now on is the run's, capped at limit.
func (c *capture) attach(limit int, marker []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = limit
	c.marker = marker
	c.attached = true
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if !c.attached {
		if c.boot.Len() < 4096 {
			c.boot.Write(p[:min(len(p), 4096-c.boot.Len())])
		}
		return n, nil
	}
	if c.statusEnd {
		return n, nil
	}
	if c.status != nil {
		c.readStatus(p)
		return n, nil
	}
	if len(c.marker) == 0 {
		c.keep(p)
		return n, nil
	}
	data := p
	if len(c.pending) > 0 {
		data = append(c.pending, p...)
		c.pending = nil
	}
	if i := bytes.Index(data, c.marker); i >= 0 {
		c.keep(data[:i])
		c.status = []byte{}
		c.readStatus(data[i+len(c.marker):])
		return n, nil
	}
	// Hold back a tail that could be the start of the marker.
	hold := 0
	for k := min(len(c.marker)-1, len(data)); k > 0; k-- {
		if bytes.HasPrefix(c.marker, data[len(data)-k:]) {
			hold = k
			break
		}
	}
	c.keep(data[:len(data)-hold])
	c.pending = append([]byte(nil), data[len(data)-hold:]...)
	return n, nil
}

func (c *capture) readStatus(p []byte) {
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		c.status = append(c.status, p[:i]...)
		c.statusEnd = true
		close(c.done)
		return
	}
	if len(c.status) < 256 {
		c.status = append(c.status, p...)
	}
}

func (c *capture) keep(p []byte) {
	c.total += int64(len(p))
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
}

// result returns the kept bytes (cut at a UTF-8 boundary when truncated) and
// whether anything was dropped.
func (c *capture) result() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) > 0 && !c.statusEnd {
		c.keep(c.pending)
		c.pending = nil
	}
	b := append([]byte(nil), c.buf.Bytes()...)
	truncated := c.total > int64(len(b))
	if truncated {
		cut := len(b)
		for back := 0; back < utf8.UTFMax && cut > 0; back++ {
			if r, size := utf8.DecodeLastRune(b[:cut]); r != utf8.RuneError || size > 1 {
				break
			}
			cut--
		}
		b = b[:cut]
	}
	return b, truncated
}

// statusLine returns the line after the marker and whether it was complete.
func (c *capture) statusLine() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.status), c.statusEnd
}

func (c *capture) bootText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.boot.String()
}
