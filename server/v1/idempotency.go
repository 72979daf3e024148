package v1

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
)

// IdempotencyStore remembers whole /v1 responses by Idempotency-Key, scoped
// to the caller's account, for a while. It lives in memory only: a key is
// honoured by the replica that first saw it, and forgotten on restart.
//
// This is not a response cache: a hosted-tool answer is never served to a
// different request, only replayed to a retry of the same one.
type IdempotencyStore struct {
	ttl time.Duration
	max int
	now func() time.Time // ages the stored responses
	// maxBytes and accountBytes cap the stored responses in all and per
	// account: a stream can be megabytes, and one account must not evict
	// every other's keys.
	maxBytes, accountBytes int64

	mu      sync.Mutex
	entries map[string]*idemEntry
	order   []string // oldest first
	bytes   int64
	byAcct  map[string]int64
}

type idemEntry struct {
	account  string
	digest   [32]byte
	done     bool
	status   int
	header   http.Header
	body     []byte
	size     int64
	storedAt time.Time
}

// Defaults of the idempotency store.
const (
	DefaultIdempotencyTTL          = 24 * time.Hour
	DefaultIdempotencyEntries      = 10000
	DefaultIdempotencyBytes        = 256 << 20
	DefaultIdempotencyAccountBytes = 64 << 20
)

// NewIdempotencyStore keeps up to entries responses for ttl (defaults: 24 h,
// 10 000 responses), at most 256 MiB of them in all and 64 MiB per account.
func NewIdempotencyStore(ttl time.Duration, entries int) *IdempotencyStore {
	return NewIdempotencyStoreBytes(ttl, entries, 0, 0)
}

// NewIdempotencyStoreBytes is NewIdempotencyStore with byte caps (0 takes
// the defaults).
func NewIdempotencyStoreBytes(ttl time.Duration, entries int, maxBytes, accountBytes int64) *IdempotencyStore {
	if ttl <= 0 {
		ttl = DefaultIdempotencyTTL
	}
	if entries <= 0 {
		entries = DefaultIdempotencyEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultIdempotencyBytes
	}
	if accountBytes <= 0 {
		accountBytes = DefaultIdempotencyAccountBytes
	}
	accountBytes = min(accountBytes, maxBytes)
	return &IdempotencyStore{ttl: ttl, max: entries, now: time.Now, maxBytes: maxBytes, accountBytes: accountBytes,
		entries: map[string]*idemEntry{}, byAcct: map[string]int64{}}
}

// begin claims key for a request with digest. It returns the stored entry
// to replay, or a refusal, or neither (the caller runs the request and then
// calls end).
func (s *IdempotencyStore) begin(account, key string, digest [32]byte) (*idemEntry, *requestError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok && e.done && s.now().Sub(e.storedAt) > s.ttl {
		s.drop(key)
	}
	if e, ok := s.entries[key]; ok {
		if e.digest != digest {
			return nil, &requestError{status: http.StatusUnprocessableEntity, code: ReasonIdempotencyKeyReused, reason: ReasonIdempotencyKeyReused,
				message: "this Idempotency-Key was already used with a different request body; use a new key for a new request"}
		}
		if !e.done {
			return nil, &requestError{status: http.StatusConflict, code: ReasonIdempotencyKeyInFlight, reason: ReasonIdempotencyKeyInFlight,
				message: "a request with this Idempotency-Key is still running; retry after it finishes"}
		}
		return e, nil
	}
	s.entries[key] = &idemEntry{account: account, digest: digest}
	s.order = append(s.order, key)
	s.evict(func() bool { return len(s.entries) > s.max }, "")
	return nil, nil
}

// drop forgets key (its place in order is skipped later).
func (s *IdempotencyStore) drop(key string) {
	e, ok := s.entries[key]
	if !ok {
		return
	}
	delete(s.entries, key)
	s.bytes -= e.size
	if s.byAcct[e.account] -= e.size; s.byAcct[e.account] <= 0 {
		delete(s.byAcct, e.account)
	}
}

// evict drops the oldest entries (of account, or of anyone when "") while
// over() holds, and compacts order.
func (s *IdempotencyStore) evict(over func() bool, account string) {
	kept := s.order[:0]
	for _, k := range s.order {
		e, ok := s.entries[k]
		if !ok {
			continue // dropped earlier
		}
		if over() && (account == "" || e.account == account) && (e.done || len(s.entries) > s.max) {
			s.drop(k)
			continue
		}
		kept = append(kept, k)
	}
	s.order = kept
}

// end stores the response of key, or forgets key when the response is not
// worth replaying (a server error or a broken stream, or a response larger
// than the account's share of the store), so a retry runs again.
func (s *IdempotencyStore) end(key string, keep bool, status int, header http.Header, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return
	}
	size := int64(len(body) + len(key) + 256)
	if !keep || size > s.accountBytes {
		s.drop(key)
		return
	}
	e.done, e.status, e.header, e.body, e.storedAt, e.size = true, status, header, body, s.now(), size
	s.bytes += size
	s.byAcct[e.account] += size
	// The account's oldest first, then anyone's, until both caps hold.
	s.evict(func() bool { return s.byAcct[e.account] > s.accountBytes }, e.account)
	s.evict(func() bool { return s.bytes > s.maxBytes }, "")
}

// recorder passes a response through and keeps a copy.
type recorder struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
	failed bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.buf.Write(b)
	n, err := r.ResponseWriter.Write(b)
	if err != nil {
		r.failed = true
	}
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// discard marks the response as not worth replaying (a stream that failed
// after its 200 was sent).
func (r *recorder) discard() { r.failed = true }

// withIdempotency runs serve once per (account, Idempotency-Key) and body;
// a retry with the same body gets the stored response.
func (h *Handler) withIdempotency(w http.ResponseWriter, r *http.Request, body []byte, serve func(http.ResponseWriter)) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		serve(w)
		return
	}
	if len(key) > 255 {
		writeRequestError(w, badRequest(ReasonInvalidRequest, "Idempotency-Key", "Idempotency-Key must be at most 255 characters"))
		return
	}
	id, _ := identity.FromContext(r.Context())
	account := id.AccountID
	scoped := fmt.Sprintf("%s\x00%s\x00%s", account, r.URL.Path, key)
	digest := sha256.Sum256(body)
	stored, rerr := h.opts.Idempotency.begin(account, scoped, digest)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	if stored != nil {
		for k, v := range stored.header {
			w.Header()[k] = v
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(stored.status)
		_, _ = w.Write(stored.body)
		return
	}
	rec := &recorder{ResponseWriter: w}
	completed := false
	defer func() {
		keep := completed && !rec.failed && rec.status != 0 && rec.status < 500 && r.Context().Err() == nil
		hdr := http.Header{}
		for _, k := range []string{"Content-Type", "Cache-Control"} {
			if v := w.Header().Get(k); v != "" {
				hdr.Set(k, v)
			}
		}
		h.opts.Idempotency.end(scoped, keep, rec.status, hdr, rec.buf.Bytes())
	}()
	serve(rec)
	completed = true
}
