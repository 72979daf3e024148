package v1

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/idempotency"
	"github.com/toolhost/toolhost/internal/identity"
)

// IdempotencyStore remembers whole /v1 responses by Idempotency-Key, scoped
// to the caller's account, in an idempotency.Store: in process memory for
// one process, in the SQL store (internal/store) for replicas, where a retry
// on any replica finds the key. The replica running a request holds its key
// under a lease it renews while the request runs; a replica that dies
// holding it frees it when the lease runs out (seconds), so a retry then
// runs the request again instead of waiting out the key's TTL.
//
// This is not a response cache: a hosted-tool answer is never served to a
// different request, only replayed to a retry of the same one.
type IdempotencyStore struct {
	store idempotency.Store
	lease time.Duration
	now   func() time.Time // the one clock of claims, leases and ages
}

// ReasonIdempotencyUnavailable: the store of Idempotency-Key records did
// not answer, so a request carrying a key is not run (it could run twice).
const ReasonIdempotencyUnavailable = "idempotency_store_unavailable"

// Defaults of the idempotency store.
const (
	DefaultIdempotencyTTL          = idempotency.DefaultTTL
	DefaultIdempotencyEntries      = idempotency.DefaultEntries
	DefaultIdempotencyBytes        = idempotency.DefaultMaxBytes
	DefaultIdempotencyAccountBytes = idempotency.DefaultAccountBytes
)

// NewIdempotencyStore keeps up to entries responses for ttl (defaults: 24 h,
// 10 000 responses), at most 256 MiB of them in all and 64 MiB per account,
// in process memory.
func NewIdempotencyStore(ttl time.Duration, entries int) *IdempotencyStore {
	return NewIdempotencyStoreBytes(ttl, entries, 0, 0)
}

// NewIdempotencyStoreBytes is NewIdempotencyStore with byte caps (0 takes
// the defaults).
func NewIdempotencyStoreBytes(ttl time.Duration, entries int, maxBytes, accountBytes int64) *IdempotencyStore {
	return NewSharedIdempotencyStore(idempotency.NewMemory(idempotency.Limits{TTL: ttl, Entries: entries,
		MaxBytes: maxBytes, AccountBytes: accountBytes}), 0, nil)
}

// NewSharedIdempotencyStore keeps the records in s, claims held under
// lease (default idempotency.DefaultLease) on the clock now (nil: the wall
// clock).
func NewSharedIdempotencyStore(s idempotency.Store, lease time.Duration, now func() time.Time) *IdempotencyStore {
	if lease <= 0 {
		lease = idempotency.DefaultLease
	}
	if now == nil {
		now = time.Now
	}
	return &IdempotencyStore{store: s, lease: lease, now: now}
}

// begin claims key for a request with digest under owner. It returns the
// stored response to replay, or a refusal, or neither (the caller runs the
// request, keeps the claim with hold and then calls end).
func (s *IdempotencyStore) begin(ctx context.Context, c idempotency.Claim) (*idempotency.Response, *requestError, http.Header) {
	res, err := s.store.Claim(ctx, c, s.now(), s.lease)
	if err != nil {
		return nil, &requestError{status: http.StatusServiceUnavailable, code: ReasonIdempotencyUnavailable, reason: ReasonIdempotencyUnavailable,
			message: "the store of Idempotency-Key records is not answering; retry shortly"}, retryAfter(time.Second)
	}
	switch res.Outcome {
	case idempotency.Reused:
		return nil, &requestError{status: http.StatusUnprocessableEntity, code: ReasonIdempotencyKeyReused, reason: ReasonIdempotencyKeyReused,
			message: "this Idempotency-Key was already used with a different request body; use a new key for a new request"}, nil
	case idempotency.InFlight:
		return nil, &requestError{status: http.StatusConflict, code: ReasonIdempotencyKeyInFlight, reason: ReasonIdempotencyKeyInFlight,
			message: "a request with this Idempotency-Key is still running; retry after it finishes"}, retryAfter(res.Retry)
	case idempotency.Replay:
		return &res.Response, nil, nil
	}
	return nil, nil, nil
}

// retryAfter are the headers that tell a client (the openai and anthropic
// SDKs read retry-after-ms) when to retry.
func retryAfter(d time.Duration) http.Header {
	d = max(d, 100*time.Millisecond)
	return http.Header{"Retry-After": {strconv.Itoa(int((d + time.Second - 1) / time.Second))},
		"Retry-After-Ms": {strconv.FormatInt(d.Milliseconds(), 10)}}
}

// hold renews c's lease until stop is closed, every third of the lease.
// It returns when stop is closed.
func (s *IdempotencyStore) hold(ctx context.Context, c idempotency.Claim, stop <-chan struct{}) {
	t := time.NewTicker(s.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			// A renewal that fails is retried at the next tick; one that
			// finds the claim gone leaves the response unstored (end).
			_, _ = s.store.Renew(context.WithoutCancel(ctx), c.Key, c.Owner, s.now(), s.lease)
		}
	}
}

// end stores the response of c, or frees the key when the response is not
// worth replaying (a server error or a broken stream), so a retry runs
// again. A response larger than the account's share is not kept.
func (s *IdempotencyStore) end(ctx context.Context, c idempotency.Claim, keep bool, resp idempotency.Response) error {
	ctx = context.WithoutCancel(ctx) // a client gone mid-request still frees its key
	if !keep {
		return s.store.Release(ctx, c.Key, c.Owner)
	}
	_, err := s.store.Complete(ctx, c.Key, c.Owner, resp, s.now())
	return err
}

// recorder keeps a copy of a response. A whole response (not a stream)
// is held back until it is stored, so a client that has an answer will
// have it replayed on any replica; a stream passes through as it is
// written (its copy is stored when it ends).
type recorder struct {
	http.ResponseWriter
	status  int
	buf     bytes.Buffer
	failed  bool
	held    bool // decided at the first write
	decided bool
}

func (r *recorder) decide() {
	if !r.decided {
		r.decided = true
		r.held = !strings.HasPrefix(r.Header().Get("Content-Type"), "text/event-stream")
	}
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.decide()
	if !r.held {
		r.ResponseWriter.WriteHeader(code)
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.decide()
	r.buf.Write(b)
	if r.held {
		return len(b), nil
	}
	n, err := r.ResponseWriter.Write(b)
	if err != nil {
		r.failed = true
	}
	return n, err
}

// Flush sends what a stream wrote so far; a held response waits.
func (r *recorder) Flush() {
	if r.decided && !r.held {
		_ = http.NewResponseController(r.ResponseWriter).Flush()
	}
}

// release sends a held response.
func (r *recorder) release() {
	if !r.held || r.status == 0 {
		return
	}
	r.ResponseWriter.WriteHeader(r.status)
	_, _ = r.ResponseWriter.Write(r.buf.Bytes())
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// discard marks the response as not worth replaying (a stream that failed
// after its 200 was sent).
func (r *recorder) discard() { r.failed = true }

// withIdempotency runs serve once per (account, Idempotency-Key) and body;
// a retry with the same body gets the stored response, on any replica
// sharing the store.
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
	s := h.opts.Idempotency
	c := idempotency.Claim{Key: fmt.Sprintf("%s\x00%s\x00%s", id.AccountID, r.URL.Path, key), Account: id.AccountID,
		Digest: sha256.Sum256(body), Owner: rand.Text()}
	stored, rerr, hdr := s.begin(r.Context(), c)
	if rerr != nil {
		for k, v := range hdr {
			w.Header()[k] = v
		}
		writeRequestError(w, rerr)
		return
	}
	if stored != nil {
		for k, v := range stored.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(stored.Status)
		_, _ = w.Write(stored.Body)
		return
	}
	stop, held := make(chan struct{}), make(chan struct{})
	go func() { defer close(held); s.hold(r.Context(), c, stop) }()
	rec := &recorder{ResponseWriter: w}
	completed := false
	defer func() {
		close(stop)
		<-held
		keep := completed && !rec.failed && rec.status != 0 && rec.status < 500 && r.Context().Err() == nil
		hdr := http.Header{}
		for _, k := range []string{"Content-Type", "Cache-Control"} {
			if v := w.Header().Get(k); v != "" {
				hdr.Set(k, v)
			}
		}
		if err := s.end(r.Context(), c, keep, idempotency.Response{Status: rec.status, Header: hdr, Body: rec.buf.Bytes()}); err != nil {
			h.opts.Logger.WarnContext(r.Context(), "idempotency record not stored", "request_id", requestID(r.Context()), "error", err)
		}
		rec.release()
	}()
	serve(rec)
	completed = true
}
