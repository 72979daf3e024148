package journal

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"sync"
	"time"
)

// MemStore is a Store in memory: for tests, benchmarks and callers that run
// without a data directory. It keeps everything until the process ends.
type MemStore struct {
	mu      sync.Mutex
	recs    map[string]*Record
	order   []string // insertion order, for floor sequence numbers
	events  map[string][]Event
	keys    map[[2]string]memKey
	holders map[string]bool
	results map[string]FullResult
}

type memKey struct {
	digest, execID string
	expires        time.Time
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{recs: map[string]*Record{}, events: map[string][]Event{},
		keys: map[[2]string]memKey{}, holders: map[string]bool{}, results: map[string]FullResult{}}
}

func (m *MemStore) Write(_ context.Context, ws []Write) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range ws {
		if w.Insert {
			if _, dup := m.recs[w.Record.ID]; dup {
				return &duplicateError{id: w.Record.ID}
			}
		} else if _, ok := m.recs[w.Record.ID]; !ok {
			return ErrNotFound
		}
	}
	for _, w := range ws {
		m.apply(w)
	}
	return nil
}

type duplicateError struct{ id string }

func (e *duplicateError) Error() string { return "journal: duplicate execution id " + e.id }

func (m *MemStore) apply(w Write) {
	r := w.Record
	if w.Insert {
		r.ArgsRaw = slices.Clone(r.ArgsRaw)
		m.recs[r.ID] = &r
		m.order = append(m.order, r.ID)
	} else {
		// An update carries the outcome; identity fields stay as inserted.
		m.recs[r.ID].takeOutcome(r)
	}
	m.events[r.ID] = append(m.events[r.ID], w.Events...)
}

// Apply implements Store.Apply.
func (m *MemStore) Apply(_ context.Context, ws []Write) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var unchanged []string
	for _, w := range ws {
		old, ok := m.recs[w.Record.ID]
		switch {
		case !ok && w.Insert:
			m.apply(w)
		case !ok || old.Lifecycle != Opened:
			unchanged = append(unchanged, w.Record.ID)
		case w.Insert:
			// The opened record is in the store already: the insert brings
			// its outcome and its whole trail.
			old.takeOutcome(w.Record)
			m.events[w.Record.ID] = slices.Clone(w.Events)
		default:
			m.apply(w)
		}
	}
	return unchanged, nil
}

func (m *MemStore) Claim(_ context.Context, c Claim) (ClaimResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{c.AccountID, c.Key}
	if cur, ok := m.keys[k]; ok && !cur.expires.Before(c.Now) {
		if cur.digest != c.Digest {
			return ClaimResult{Reused: true, Existing: m.get(cur.execID)}, nil
		}
		if r, ok := m.recs[cur.execID]; ok && !(r.Lifecycle == Finished && r.Commit == CommitDiscarded) {
			return ClaimResult{Existing: *r}, nil
		}
	}
	if _, dup := m.recs[c.Open.Record.ID]; dup {
		return ClaimResult{}, &duplicateError{id: c.Open.Record.ID}
	}
	m.keys[k] = memKey{digest: c.Digest, execID: c.Open.Record.ID, expires: c.ExpiresAt}
	m.apply(c.Open)
	return ClaimResult{Claimed: true}, nil
}

func (m *MemStore) get(id string) Record {
	if r, ok := m.recs[id]; ok {
		return *r
	}
	return Record{ID: id}
}

func (m *MemStore) List(_ context.Context, q Query) ([]Record, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := make([]*Record, 0, len(m.order))
	for _, id := range m.order {
		all = append(all, m.recs[id])
	}
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.Before(all[j].CreatedAt)
		}
		return all[i].ID < all[j].ID
	})
	seq := map[string]int{}
	perFloor := map[[2]string]int{}
	var out []Record
	for _, r := range all {
		k := [2]string{r.AccountID, r.FloorID}
		seq[r.ID] = perFloor[k]
		perFloor[k]++
		if matches(r, q) {
			c := *r
			c.Seq = seq[r.ID]
			out = append(out, c)
		}
	}
	key := func(r Record) (time.Time, int) {
		switch q.SortBy {
		case SortCreatedAt:
			return r.CreatedAt, 0
		case SortFinishedAt:
			return r.FinishedAt, 0
		case SortSeq:
			return time.Time{}, seq[r.ID]
		}
		return r.StartedAt, 0
	}
	sort.SliceStable(out, func(i, j int) bool {
		ti, si := key(out[i])
		tj, sj := key(out[j])
		if q.SortBy == SortFinishedAt && ti.IsZero() != tj.IsZero() {
			return tj.IsZero() // open records last either way
		}
		var less, equal bool
		if q.SortBy == SortSeq {
			less, equal = si < sj, si == sj
		} else {
			less, equal = ti.Before(tj), ti.Equal(tj)
		}
		if equal {
			less = out[i].ID < out[j].ID
		}
		if q.Asc {
			return less
		}
		return !less && !(equal && out[i].ID == out[j].ID)
	})
	total := len(out)
	if q.After != nil {
		out = slices.DeleteFunc(out, func(r Record) bool { return !q.follows(r) })
	}
	lo := min(q.Offset, len(out))
	hi := len(out)
	if q.Limit > 0 {
		hi = min(lo+q.Limit, hi)
	}
	if q.NoTotal {
		total = -1
	}
	page := slices.Clone(out[lo:hi])
	if q.NoSeq {
		for i := range page {
			page[i].Seq = 0
		}
	}
	return page, total, nil
}

func matches(r *Record, q Query) bool {
	eq := func(want, have string) bool { return want == "" || want == have }
	if r.AccountID != q.AccountID || !eq(q.SessionID, r.SessionID) || !eq(q.FloorID, r.FloorID) ||
		!eq(q.RunID, r.RunID) || !eq(q.CallerSlot, r.CallerSlot) || !eq(q.Face, r.Face) || !eq(q.ToolName, r.ToolName) || !eq(q.DeliveryMode, r.DeliveryMode) ||
		!eq(string(q.Lifecycle), string(r.Lifecycle)) || !eq(string(q.Commit), string(r.Commit)) ||
		!eq(q.ProviderType, r.ProviderType) {
		return false
	}
	if q.HasPageID && r.PageID != q.PageID {
		return false
	}
	return len(q.Statuses) == 0 || slices.Contains(q.Statuses, r.Status)
}

func (m *MemStore) Get(_ context.Context, accountID, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok || r.AccountID != accountID {
		return Record{}, ErrNotFound
	}
	return *r, nil
}

func (m *MemStore) Events(_ context.Context, accountID, id string) ([]Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok || r.AccountID != accountID {
		return nil, ErrNotFound
	}
	return slices.Clone(m.events[id]), nil
}

func (m *MemStore) Opened(context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for _, id := range m.order {
		if r := m.recs[id]; r.Lifecycle == Opened {
			out = append(out, *r)
		}
	}
	return out, nil
}

func (m *MemStore) LastEvent(_ context.Context, id string) (Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	evs := m.events[id]
	if len(evs) == 0 {
		return Event{}, ErrNotFound
	}
	return evs[len(evs)-1], nil
}

func (m *MemStore) PurgeIdempotency(_ context.Context, t time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, v := range m.keys {
		if v.expires.Before(t) {
			delete(m.keys, k)
			n++
		}
	}
	return n, nil
}

func (m *MemStore) Hold(_ context.Context, instanceID string) error {
	m.mu.Lock()
	m.holders[instanceID] = true
	m.mu.Unlock()
	return nil
}

// Release forgets an instance, as if its process had died (tests).
func (m *MemStore) Release(instanceID string) {
	m.mu.Lock()
	delete(m.holders, instanceID)
	m.mu.Unlock()
}

func (m *MemStore) Alive(_ context.Context, instanceID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holders[instanceID], nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// PutResult implements Store.PutResult.
func (m *MemStore) PutResult(_ context.Context, r FullResult) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.results[r.ExecutionID]; ok {
		return nil
	}
	r.Text, r.Structured = slices.Clone(r.Text), slices.Clone(r.Structured)
	m.results[r.ExecutionID] = r
	return nil
}

// GetResult implements Store.GetResult.
func (m *MemStore) GetResult(_ context.Context, accountID, id string) (FullResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[id]
	if !ok || r.AccountID != accountID {
		return FullResult{}, ErrNotFound
	}
	r.Text, r.Structured = slices.Clone(r.Text), slices.Clone(r.Structured)
	return r, nil
}
