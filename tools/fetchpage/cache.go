package fetchpage

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// document is one fetched and extracted URL in one format: what the cache
// keeps and what pagination slices.
type document struct {
	FinalURL    string
	Status      int
	ContentType string
	Title       string
	Content     string
	Pages       int    // pages in the PDF, 0 otherwise
	Extracted   int    // pages extracted by this call (the paid unit)
	PageRange   string // PDF pages in Content, e.g. "1-300"
	NextPages   string // PDF pages to ask for next, when the budget cut
	FetchedAt   time.Time
	// Cut is set when the extraction budget cut an HTML page's text.
	Cut *textCut
	// pdf is the PDF kept for later calls (cached documents of PDFs hold
	// only this; pdfDocument builds the content per call).
	pdf *pdfState
}

// cache is a small LRU of extracted documents with a TTL and a bound on the
// total content size. A library LRU (golang-lru's expirable) bounds entries,
// not bytes; one 10 MiB page must not be able to push the process over its
// memory budget, so this keeps its own byte count.
type cache struct {
	mu       sync.Mutex
	ttl      time.Duration
	maxBytes int64
	bytes    int64
	order    *list.List // front = most recently used
	items    map[string]*list.Element
	now      func() time.Time
}

type cacheEntry struct {
	key     string
	doc     *document
	size    int64
	expires time.Time
}

func newCache(ttl time.Duration, maxBytes int64, now func() time.Time) *cache {
	return &cache{ttl: ttl, maxBytes: maxBytes, order: list.New(), items: map[string]*list.Element{}, now: now}
}

func (c *cache) get(key string) (*document, bool) {
	if c == nil || c.ttl <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !c.now().Before(e.expires) {
		c.remove(el)
		return nil, false
	}
	c.order.MoveToFront(el)
	return e.doc, true
}

func (c *cache) put(key string, doc *document) {
	if c == nil || c.ttl <= 0 {
		return
	}
	size := int64(len(doc.Content)+len(doc.Title)+len(doc.FinalURL)+len(key)) + 128
	if doc.pdf != nil {
		size += doc.pdf.size()
	}
	if size > c.maxBytes/2 {
		return // one page may not evict most of the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, doc: doc, size: size, expires: c.now().Add(c.ttl)})
	c.bytes += size
	for c.bytes > c.maxBytes && c.order.Len() > 0 {
		c.remove(c.order.Back())
	}
}

func (c *cache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.order.Remove(el)
	delete(c.items, e.key)
	c.bytes -= e.size
}

// hostLimiter bounds the fetches in flight to one host so a model cannot
// hammer a site (or make us look like we do) with parallel calls.
type hostLimiter struct {
	mu    sync.Mutex
	per   int
	hosts map[string]*hostSlot
	// counted, when set (by tests), is called once a fetch counts in
	// refs, before it waits for a slot.
	counted func()
}

type hostSlot struct {
	sem  chan struct{}
	refs int
}

func newHostLimiter(per int) *hostLimiter {
	return &hostLimiter{per: per, hosts: map[string]*hostSlot{}}
}

// acquire waits for a slot for host; the returned function releases it.
func (l *hostLimiter) acquire(ctx context.Context, host string) (func(), error) {
	l.mu.Lock()
	s := l.hosts[host]
	if s == nil {
		s = &hostSlot{sem: make(chan struct{}, l.per)}
		l.hosts[host] = s
	}
	s.refs++
	l.mu.Unlock()
	if l.counted != nil {
		l.counted()
	}
	unref := func() {
		l.mu.Lock()
		s.refs--
		if s.refs == 0 {
			delete(l.hosts, host)
		}
		l.mu.Unlock()
	}
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem; unref() }, nil
	case <-ctx.Done():
		unref()
		return nil, ctx.Err()
	}
}

// inFlight reports the fetches holding a slot for host (for tests).
func (l *hostLimiter) inFlight(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.hosts[host]; s != nil {
		return len(s.sem)
	}
	return 0
}

// refs reports the fetches holding or waiting for a slot for host (for tests).
func (l *hostLimiter) refs(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.hosts[host]; s != nil {
		return s.refs
	}
	return 0
}
