package v1

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhost/toolhost/internal/idempotency"
	"github.com/toolhost/toolhost/internal/store"
)

func idemHandler(s *IdempotencyStore) *Handler {
	return &Handler{opts: Options{Idempotency: s, Logger: slog.New(slog.DiscardHandler)}}
}

func idemRequest(key, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	r.Header.Set("Idempotency-Key", key)
	return r
}

// The replica running a request renews its key's lease while it runs, so a
// retry elsewhere is told to wait however long the request takes; once it
// answers, the retry gets the answer replayed.
func TestIdempotencyLeaseIsRenewedWhileTheRequestRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSharedIdempotencyStore(idempotency.NewMemory(idempotency.Limits{}), 3*time.Second, nil)
		h := idemHandler(s)
		release := make(chan struct{})
		go func() {
			w := httptest.NewRecorder()
			h.withIdempotency(w, idemRequest("k", "{}"), []byte("{}"), func(w http.ResponseWriter) {
				<-release
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"answer":42}`))
			})
		}()
		synctest.Wait()
		time.Sleep(20 * time.Second) // six leases: only renewals keep the key
		w := httptest.NewRecorder()
		h.withIdempotency(w, idemRequest("k", "{}"), []byte("{}"), func(http.ResponseWriter) { t.Error("the retry ran while the first was running") })
		if w.Code != http.StatusConflict || w.Header().Get("Retry-After-Ms") == "" {
			t.Fatalf("retry while running = %d %v", w.Code, w.Header())
		}
		close(release)
		synctest.Wait()
		w = httptest.NewRecorder()
		h.withIdempotency(w, idemRequest("k", "{}"), []byte("{}"), func(http.ResponseWriter) { t.Error("the retry ran again") })
		if w.Code != 200 || w.Body.String() != `{"answer":42}` || w.Header().Get("Idempotent-Replayed") != "true" ||
			w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("replay = %d %v %q", w.Code, w.Header(), w.Body)
		}
	})
}

// A key held by a replica that died (no renewals) is refused until its
// lease runs out, then runs on the retry's replica.
func TestIdempotencyKeyOfADeadHolderIsTakenOverAtLeaseEnd(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	mem := idempotency.NewMemory(idempotency.Limits{})
	s := NewSharedIdempotencyStore(mem, 3*time.Second, func() time.Time { return now })
	h := idemHandler(s)
	dead := idempotency.Claim{Key: "\x00/v1/chat/completions\x00k", Digest: sha256.Sum256([]byte("{}")), Owner: "dead replica"}
	if r, err := mem.Claim(context.Background(), dead, now, 3*time.Second); err != nil || r.Outcome != idempotency.Claimed {
		t.Fatalf("dead claim: %v %v", r, err)
	}
	now = now.Add(2 * time.Second)
	w := httptest.NewRecorder()
	h.withIdempotency(w, idemRequest("k", "{}"), []byte("{}"), func(http.ResponseWriter) { t.Error("ran under a live lease") })
	if w.Code != http.StatusConflict || w.Header().Get("Retry-After-Ms") != "1000" {
		t.Fatalf("under the lease: %d retry-after-ms %q", w.Code, w.Header().Get("Retry-After-Ms"))
	}
	now = now.Add(time.Second)
	ran := false
	w = httptest.NewRecorder()
	h.withIdempotency(w, idemRequest("k", "{}"), []byte("{}"), func(w http.ResponseWriter) { ran = true; _, _ = w.Write([]byte("ok")) })
	if !ran || w.Code != 200 {
		t.Fatalf("at the lease's end: ran %v, %d", ran, w.Code)
	}
}

// A request that fails (a 5xx) or whose client went away frees its key;
// a key used with another body is refused.
func TestIdempotencyFailedRequestFreesItsKey(t *testing.T) {
	h := idemHandler(NewIdempotencyStore(0, 0))
	w := httptest.NewRecorder()
	h.withIdempotency(w, idemRequest("k", "a"), []byte("a"), func(w http.ResponseWriter) { w.WriteHeader(502) })
	runs := 0
	for range 2 {
		w = httptest.NewRecorder()
		h.withIdempotency(w, idemRequest("k", "a"), []byte("a"), func(w http.ResponseWriter) { runs++; _, _ = w.Write([]byte("ok")) })
	}
	if runs != 1 {
		t.Fatalf("after a 502 the key ran %d times in two retries, want once", runs)
	}
	w = httptest.NewRecorder()
	h.withIdempotency(w, idemRequest("k", "b"), []byte("b"), func(http.ResponseWriter) { t.Error("another body ran under a used key") })
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), ReasonIdempotencyKeyReused) {
		t.Fatalf("other body: %d %s", w.Code, w.Body)
	}
}

// When the store of keys does not answer, a request with a key is not run
// (it could run twice): 503 with a code and when to retry.
func TestIdempotencyStoreDownRefusesKeyedRequests(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	h := idemHandler(NewSharedIdempotencyStore(db.Idempotency(idempotency.Limits{}), 0, nil))
	w := httptest.NewRecorder()
	h.withIdempotency(w, idemRequest("k", "{}"), []byte("{}"), func(http.ResponseWriter) { t.Error("ran without its key claimed") })
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), ReasonIdempotencyUnavailable) || w.Header().Get("Retry-After") == "" {
		t.Fatalf("store down: %d %v %s", w.Code, w.Header(), w.Body)
	}
}

// checkingWriter runs check when the first bytes of a response reach the
// client.
type checkingWriter struct {
	*httptest.ResponseRecorder
	check   func()
	checked bool
}

func (w *checkingWriter) Write(b []byte) (int, error) {
	if !w.checked {
		w.checked = true
		w.check()
	}
	return w.ResponseRecorder.Write(b)
}

// A whole (not streamed) answer is stored before the client gets a byte of
// it: a client that has the answer finds it replayed on any replica, however
// soon it retries. A stream goes out as it is written.
func TestIdempotencyWholeAnswerIsStoredBeforeItIsSent(t *testing.T) {
	mem := idempotency.NewMemory(idempotency.Limits{})
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	h := idemHandler(NewSharedIdempotencyStore(mem, 0, func() time.Time { return now }))
	for _, tc := range []struct {
		name, contentType string
		storedFirst       bool
	}{
		{"json", "application/json", true},
		{"stream", "text/event-stream", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := false
			w := &checkingWriter{ResponseRecorder: httptest.NewRecorder(), check: func() {
				c := idempotency.Claim{Key: "\x00/v1/chat/completions\x00" + tc.name, Digest: sha256.Sum256([]byte("{}")), Owner: "probe"}
				r, err := mem.Claim(context.Background(), c, now, time.Second)
				stored = err == nil && r.Outcome == idempotency.Replay
			}}
			h.withIdempotency(w, idemRequest(tc.name, "{}"), []byte("{}"), func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(200)
				_, _ = w.Write([]byte("data"))
				http.NewResponseController(w).Flush()
			})
			if stored != tc.storedFirst || w.Body.String() != "data" || w.Code != 200 {
				t.Fatalf("stored before the first byte: %v (want %v); sent %d %q", stored, tc.storedFirst, w.Code, w.Body)
			}
		})
	}
}
