package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

// fullWrite has every field of Write, Record and Event set, so that a
// field the codec forgets shows up as a difference.
func fullWrite(t *testing.T) Write {
	t.Helper()
	at := time.Unix(1_790_000_000, 123456789).UTC()
	w := Write{Insert: true, Record: Record{
		ID: "id", AccountID: "acct", KeyID: "key", SessionID: "sess", FloorID: "floor", RunID: "run", PageID: "page",
		Round: 3, CallID: "call", CallerSlot: "narrator", Face: "mcp", ProviderID: "toolhost", ProviderType: "builtin",
		ToolName: "get_time", ToolVersion: "1.0.0", SideEffectLevel: "none",
		ArgsRaw: []byte{'{', 0xff, 0}, Args: json.RawMessage(`{"a":1}`), ArgsDigest: "digest", IdempotencyKey: "idem",
		TraceID: "trace", Status: StatusError, Lifecycle: Finished, Commit: CommitDiscarded, State: StateFailedBeforeCommit,
		Result: json.RawMessage(`{"error":{}}`), ResultText: "text ✓", ErrorCode: "boom", ErrorMessage: "it broke",
		Summary: "sum", Units: 1.5, Truncated: true, Duration: 1234 * time.Millisecond, StartedAt: at,
		FinishedAt: at.Add(time.Second), DeliveryMode: "inline", AttemptNo: 2, RuntimeJobID: "job",
		ReplayParentID: "parent", InstanceID: "inst", CreatedAt: at.Add(-time.Second), Seq: 7,
	}, Events: []Event{
		{Seq: 4, State: StateExecuting, Kind: KindAttempt, At: at, Detail: json.RawMessage(`{"x":"y"}`)},
		{Seq: -1, State: StateObserved, At: at.Add(time.Millisecond), Detail: json.RawMessage(`[]`)},
	}}
	for _, v := range []reflect.Value{reflect.ValueOf(w), reflect.ValueOf(w.Record), reflect.ValueOf(w.Events[0])} {
		for i := range v.NumField() {
			if v.Type().Field(i).Name == "ResultExpiredAt" {
				// Set by the store's result retention of jobs only: no
				// write, so no spool, carries it.
				continue
			}
			if v.Field(i).IsZero() {
				t.Fatalf("fullWrite leaves %s.%s zero", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	return w
}

func TestCodecRoundTripsEveryField(t *testing.T) {
	w := fullWrite(t)
	got, err := decodeWrite(appendWrite(nil, w))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("round trip changed the write:\n got %+v\nwant %+v", got, w)
	}
	// nil and empty raw fields, zero times and no events stay what they are.
	var empty Write
	empty.Record.ArgsRaw = []byte{}
	got, err = decodeWrite(appendWrite(nil, empty))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, empty) {
		t.Errorf("empty write: got %+v", got)
	}
}

// A spool written by a binary before version 2 holds the face in the
// caller slot and none after the events: it still decodes, with the face
// moved where it belongs now.
func TestCodecReadsVersion1(t *testing.T) {
	w := fullWrite(t)
	w.Record.CallerSlot, w.Record.Face = "hosted", ""
	for i := range w.Events {
		w.Events[i].Kind = ""
	}
	b := appendWrite(nil, w)
	b[0] = 1
	b = b[:len(b)-1-len(w.Events)] // the empty face, the empty kinds
	got, err := decodeWrite(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Record.Face != "hosted" || got.Record.CallerSlot != "" {
		t.Errorf("version 1 write: face %q, slot %q; want hosted and none", got.Record.Face, got.Record.CallerSlot)
	}
	if _, err := decodeWrite(append([]byte{codecVersion + 1}, b[1:]...)); !errors.Is(err, errCodec) {
		t.Errorf("unknown version: %v", err)
	}
}

// A spool written by a binary before version 3 has no event kinds after
// the face: its events decode as transitions, everything else as it was.
func TestCodecReadsVersion2(t *testing.T) {
	w := fullWrite(t)
	for i := range w.Events {
		w.Events[i].Kind = ""
	}
	b := appendWrite(nil, w)
	b[0] = 2
	b = b[:len(b)-len(w.Events)] // the kinds, one empty string each
	got, err := decodeWrite(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("version 2 write:\n got %+v\nwant %+v", got, w)
	}
	// A version 2 write followed by kinds is damaged, not version 3.
	if _, err := decodeWrite(append(b, 0, 0)); !errors.Is(err, errCodec) {
		t.Errorf("version 2 with trailing kinds: %v", err)
	}
}

func TestCodecRefusesDamagedInput(t *testing.T) {
	b := appendWrite(nil, fullWrite(t))
	for i := range b {
		if _, err := decodeWrite(b[:i]); err == nil {
			t.Fatalf("a write cut at %d of %d bytes decoded", i, len(b))
		}
	}
	if _, err := decodeWrite(append(b, 0)); !errors.Is(err, errCodec) {
		t.Errorf("trailing byte: %v", err)
	}
}

func FuzzDecodeWrite(f *testing.F) {
	f.Add(appendWrite(nil, Write{Insert: true, Record: Record{ID: "a"}}))
	f.Add(appendWrite(nil, Write{Events: []Event{{State: StateProposed, Detail: json.RawMessage(`{}`)}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeWrite(b)
		if err != nil {
			return
		}
		// What decodes survives another round trip unchanged. (Compared as
		// encodings: the input may use a longer varint than needed, and a
		// NaN is not equal to itself.)
		enc := appendWrite(nil, w)
		again, err := decodeWrite(enc)
		if err != nil || !bytes.Equal(appendWrite(nil, again), enc) {
			t.Errorf("a decoded write does not round-trip: %v\n%+v\n%+v", err, again, w)
		}
	})
}

func TestReplayStopsAtATornWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dead.000001.spool")
	var frames []byte
	for i := range 3 {
		frames = appendFrame(frames, uint64(i+1), appendWrite(nil, Write{Insert: true, Record: Record{ID: string(rune('a' + i))}}))
	}
	torn := appendFrame(nil, 4, appendWrite(nil, Write{Insert: true, Record: Record{ID: "d"}}))
	if err := os.WriteFile(path, append(frames, torn[:len(torn)-3]...), 0o600); err != nil {
		t.Fatal(err)
	}
	ws, skipped, err := readSegment(path)
	if err != nil || len(ws) != 3 || skipped != int64(len(torn)-3) {
		t.Fatalf("%d writes, %d bytes skipped, %v; want 3 and %d", len(ws), skipped, err, len(torn)-3)
	}
	// A flipped bit in the middle ends the segment there too.
	frames[len(frames)-5] ^= 1
	os.WriteFile(path, frames, 0o600)
	if ws, _, _ := readSegment(path); len(ws) != 2 {
		t.Errorf("%d writes before a corrupt frame, want 2", len(ws))
	}
}

// flakyStore refuses Apply while down, and always for the ids in refuse.
type flakyStore struct {
	*MemStore
	mu     sync.Mutex
	down   bool
	refuse map[string]bool
	calls  int
	// applied, when set, is signalled (without blocking) after every
	// write the store took.
	applied chan struct{}
}

func (f *flakyStore) Apply(ctx context.Context, ws []Write) ([]string, error) {
	f.mu.Lock()
	f.calls++
	down := f.down
	refused := false
	for _, w := range ws {
		refused = refused || f.refuse[w.Record.ID]
	}
	f.mu.Unlock()
	if down {
		return nil, errors.New("store down")
	}
	if refused {
		return nil, errors.New("refused")
	}
	unchanged, err := f.MemStore.Apply(ctx, ws)
	if err == nil && f.applied != nil {
		select {
		case f.applied <- struct{}{}:
		default: // one signal pending is enough: the waiter looks again
		}
	}
	return unchanged, err
}

func (f *flakyStore) Alive(ctx context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return false, errors.New("store down")
	}
	return f.MemStore.Alive(ctx, id)
}

func (f *flakyStore) set(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func call(id string) (Record, []Event, Record, []Event) {
	r := Record{ID: id, AccountID: "acct", ToolName: "get_time", Status: StatusRunning, Lifecycle: Opened, Commit: CommitPending, State: StateExecuting}
	f := r
	f.Status, f.Lifecycle, f.Commit, f.State = StatusSuccess, Finished, CommitCommitted, StateObserved
	return r, []Event{{Seq: 0, State: StateProposed}, {Seq: 1, State: StateExecuting}}, f, []Event{{Seq: 2, State: StateObserved}}
}

func spooledJournal(t *testing.T, s Store, interval time.Duration) (*Journal, string) {
	t.Helper()
	dir := t.TempDir()
	j := New(s, Options{InstanceID: "inst", SpoolDir: dir, ApplyInterval: interval, WaitForStore: true, Logger: slog.New(slog.DiscardHandler)})
	if _, err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return j, dir
}

// TestShortCallCostsTheStoreOneInsert: with WaitForStore, the outcome is
// applied before Finish returns, together with the opened record.
func TestShortCallCostsTheStoreOneInsert(t *testing.T) {
	fs := &flakyStore{MemStore: NewMemStore()}
	j, _ := spooledJournal(t, fs, time.Hour)
	defer j.Close()
	ctx := context.Background()
	r, evs, f, fevs := call("c1")
	if err := j.Open(ctx, r, evs); err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(ctx, f, fevs); err != nil {
		t.Fatal(err)
	}
	if fs.calls != 1 {
		t.Errorf("%d Apply calls for one short call, want 1", fs.calls)
	}
	got, err := fs.Get(ctx, "acct", "c1")
	if err != nil || got.Lifecycle != Finished {
		t.Fatalf("%+v %v", got, err)
	}
	if e, _ := fs.Events(ctx, "acct", "c1"); len(e) != 3 {
		t.Errorf("%d events, want 3", len(e))
	}
}

func TestSpoolKeepsWritesWhileTheStoreIsDown(t *testing.T) {
	fs := &flakyStore{MemStore: NewMemStore(), applied: make(chan struct{}, 1)}
	j, dir := spooledJournal(t, fs, 20*time.Millisecond)
	ctx := context.Background()
	fs.set(true)
	r, evs, f, fevs := call("c1")
	if err := j.Open(ctx, r, evs); err != nil {
		t.Fatal(err)
	}
	// The outcome cannot reach the store, but it is durable in the spool:
	// the call does not fail.
	if err := j.Finish(ctx, f, fevs); err != nil {
		t.Fatalf("Finish with the store down: %v", err)
	}
	if _, err := fs.Get(ctx, "acct", "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("store down, yet %v", err)
	}
	if err := j.Flush(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Flush with the store down: %v, want ErrUnavailable", err)
	}
	fs.set(false)
	// The ticker retries on its own (backing off up to 5 s): wait for the
	// store to take a write, then look.
	deadline := time.After(time.Minute)
	for {
		if got, err := fs.Get(ctx, "acct", "c1"); err == nil && got.Lifecycle == Finished {
			break
		}
		select {
		case <-fs.applied:
		case <-deadline:
			t.Fatal("the spooled call did not reach the store once it was back")
		}
	}
	j.Close()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spool left after everything was applied: %v", left)
	}
}

func TestAWriteTheStoreKeepsRefusingIsSetAside(t *testing.T) {
	fs := &flakyStore{MemStore: NewMemStore(), refuse: map[string]bool{"bad": true}}
	j, dir := spooledJournal(t, fs, 10*time.Millisecond)
	ctx := context.Background()
	for _, id := range []string{"good1", "bad", "good2"} {
		r, evs, f, fevs := call(id)
		if err := j.Open(ctx, r, evs); err != nil {
			t.Fatal(err)
		}
		if err := j.Finish(ctx, f, fevs); err != nil {
			t.Fatal(err)
		}
	}
	// Every Flush that fails led an apply round the refused write failed
	// in; at its third failure it is set aside (that round still reports
	// the failure), so the fourth Flush at the latest succeeds. Rounds the
	// ticker leads meanwhile only set it aside sooner.
	for failed := 0; j.Flush(ctx) != nil; failed++ {
		if failed == 3 {
			t.Fatal("the refused write still blocks the spool after three failed rounds")
		}
	}
	for _, id := range []string{"good1", "good2"} {
		if got, err := fs.Get(ctx, "acct", id); err != nil || got.Lifecycle != Finished {
			t.Errorf("%s: %+v %v", id, got, err)
		}
	}
	j.Close()
	ws, _, err := readSegment(filepath.Join(dir, "inst.rejected"))
	if err != nil || len(ws) != 2 || ws[0].w.Record.ID != "bad" || !ws[0].w.Insert || ws[1].w.Insert {
		t.Fatalf("set-aside file: %d writes %v", len(ws), err)
	}
}

func TestALiveProcessSpoolIsNotReplayed(t *testing.T) {
	s := NewMemStore()
	dir := t.TempDir()
	a := New(s, Options{InstanceID: "a", SpoolDir: dir, ApplyInterval: time.Hour})
	if _, err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r, evs, _, _ := call("c1")
	if err := a.Open(context.Background(), r, evs); err != nil {
		t.Fatal(err)
	}
	b := New(s, Options{InstanceID: "b", SpoolDir: dir})
	if _, err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := s.Get(context.Background(), "acct", "c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("b applied the spool of a, which is alive: %v", err)
	}
}
