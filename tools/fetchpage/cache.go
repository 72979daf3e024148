package fetchpage

import (
	"container/list"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"
)

// SharedCache is a cache every replica reads and writes (Redis:
// internal/sharedcache); it bounds its own entries, their size and the
// time it takes.
type SharedCache interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// WithShared puts the extracted pages (not PDFs, which are kept whole and
// read page by page) in a cache the replicas share, behind the local one:
// a page fetched by one replica is a cache hit on the others.
func WithShared(s SharedCache) Option { return func(t *Tool) { t.shared = s } }

// sharedDoc is a document as the shared cache keeps it.
type sharedDoc struct {
	FinalURL    string    `json:"final_url"`
	Status      int       `json:"status"`
	ContentType string    `json:"content_type"`
	Title       string    `json:"title"`
	Content     string    `json:"content"`
	FetchedAt   time.Time `json:"fetched_at"`
	CutKept     int       `json:"cut_kept,omitempty"`
	CutTotal    int       `json:"cut_total,omitempty"`
	Expires     time.Time `json:"expires"`
}

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
	shared   SharedCache
	logger   *slog.Logger
}

type cacheEntry struct {
	key     string
	doc     *document
	size    int64
	expires time.Time
}

func newCache(ttl time.Duration, maxBytes int64, now func() time.Time, shared SharedCache, logger *slog.Logger) *cache {
	return &cache{ttl: ttl, maxBytes: maxBytes, order: list.New(), items: map[string]*list.Element{}, now: now, shared: shared, logger: logger}
}

func (c *cache) get(ctx context.Context, key string) (*document, bool) {
	if c == nil || c.ttl <= 0 {
		return nil, false
	}
	if doc, ok := c.getLocal(key); ok {
		return doc, true
	}
	if c.shared == nil {
		return nil, false
	}
	b, ok, err := c.shared.Get(ctx, key)
	if err != nil {
		c.logger.WarnContext(ctx, "fetch_page shared cache read failed", "err", err)
	}
	var sd sharedDoc
	if !ok || json.Unmarshal(b, &sd) != nil || !c.now().Before(sd.Expires) {
		return nil, false
	}
	doc := &document{FinalURL: sd.FinalURL, Status: sd.Status, ContentType: sd.ContentType, Title: sd.Title, Content: sd.Content, FetchedAt: sd.FetchedAt}
	if sd.CutTotal > 0 {
		doc.Cut = &textCut{Kept: sd.CutKept, Total: sd.CutTotal}
	}
	c.putLocal(key, doc, sd.Expires)
	return doc, true
}

func (c *cache) getLocal(key string) (*document, bool) {
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

func (c *cache) put(ctx context.Context, key string, doc *document) {
	if c == nil || c.ttl <= 0 {
		return
	}
	expires := c.now().Add(c.ttl)
	if c.shared != nil && doc.pdf == nil {
		sd := sharedDoc{FinalURL: doc.FinalURL, Status: doc.Status, ContentType: doc.ContentType, Title: doc.Title,
			Content: doc.Content, FetchedAt: doc.FetchedAt, Expires: expires}
		if doc.Cut != nil {
			sd.CutKept, sd.CutTotal = doc.Cut.Kept, doc.Cut.Total
		}
		b, err := json.Marshal(sd)
		if err == nil {
			err = c.shared.Set(ctx, key, b, c.ttl)
		}
		if err != nil {
			c.logger.WarnContext(ctx, "fetch_page shared cache write failed", "err", err)
		}
	}
	c.putLocal(key, doc, expires)
}

func (c *cache) putLocal(key string, doc *document, expires time.Time) {
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
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, doc: doc, size: size, expires: expires})
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
