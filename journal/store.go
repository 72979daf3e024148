package journal

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned when a record does not exist in the account.
var ErrNotFound = errors.New("journal: no such execution")

// ErrRefused marks a store error caused by what a write holds (a value
// the store cannot keep, a constraint), not by the store being down, full
// or read-only: the same write will be refused again, and the others of
// its batch are not at fault. The spool sets such a write aside even when
// no other write of its round went in.
var ErrRefused = errors.New("journal: the store refuses the write")

// Store is the storage the journal needs. Package store implements it for
// SQLite and PostgreSQL; MemStore implements it in memory. Every method that
// reads records is scoped by account.
type Store interface {
	// Write applies the writes in order in one transaction: all or none.
	Write(ctx context.Context, ws []Write) error
	// Apply is Write for the journal's spool, which may hand the store the
	// same write twice (a process died after the store had it but before
	// the spool forgot it) and hands it at most one write per record. In
	// one transaction: an insert of a new record inserts it; an insert of a
	// record that is stored and still opened brings its outcome and its
	// whole list of events (it carries them from the first); an update
	// changes a stored opened record as Write would. Any other write
	// changes nothing and its record id is returned: the stored record
	// (finished already, perhaps reconciled by another process) is kept.
	Apply(ctx context.Context, ws []Write) (unchanged []string, err error)
	// Claim takes an idempotency key for a call and inserts the call's
	// opened record, atomically; or reports why the key is not free.
	Claim(ctx context.Context, c Claim) (ClaimResult, error)
	// List returns one page of records matching q and the total count.
	List(ctx context.Context, q Query) ([]Record, int, error)
	// Get returns one record.
	Get(ctx context.Context, accountID, id string) (Record, error)
	// Events returns the events of one record in order.
	Events(ctx context.Context, accountID, id string) ([]Event, error)
	// Opened returns every opened record of every account, for
	// reconciliation.
	Opened(ctx context.Context) ([]Record, error)
	// LastEvent returns the last event of a record (any account).
	LastEvent(ctx context.Context, id string) (Event, error)
	// PutResult keeps the whole result of a cut call (FullResult); a
	// second copy for an execution id already kept changes nothing.
	PutResult(ctx context.Context, r FullResult) error
	// GetResult returns the whole result kept for one execution of the
	// account: ErrNotFound when none was kept (its result was not cut, or
	// the id is another account's or none at all).
	GetResult(ctx context.Context, accountID, id string) (FullResult, error)
	// PurgeIdempotency deletes idempotency claims that expired before t.
	// Journal records are never deleted.
	PurgeIdempotency(ctx context.Context, t time.Time) (int, error)
	// Hold marks this process (instance) alive for as long as the store is
	// open; Alive tells whether another instance still holds its mark.
	Hold(ctx context.Context, instanceID string) error
	Alive(ctx context.Context, instanceID string) (bool, error)
}

// Write is one change to a record: the insertion of a new record (Insert)
// or the update of its outcome fields, plus the events to append.
type Write struct {
	Insert bool
	Record Record
	Events []Event
}

// Claim asks for an idempotency key on behalf of Open, a new opened record.
type Claim struct {
	AccountID string
	Key       string
	Digest    string
	Tool      string
	Version   string
	Now       time.Time
	ExpiresAt time.Time
	Open      Write
}

// ClaimResult says what Claim found. Claimed means the key is ours and Open
// was written. Otherwise Existing is the record that holds the key, and
// Reused says whether it was taken with another digest.
type ClaimResult struct {
	Claimed  bool
	Reused   bool
	Existing Record
}

// Sort fields of Query.
const (
	SortCreatedAt  = "created_at"
	SortStartedAt  = "started_at"
	SortFinishedAt = "finished_at"
	// SortSeq orders by the position of a call inside its floor (legacy
	// call-records).
	SortSeq = "seq"
)

// Query filters, sorts and pages records. Empty fields do not filter.
type Query struct {
	AccountID    string
	SessionID    string
	FloorID      string
	RunID        string
	PageID       string
	HasPageID    bool // PageID filter given
	CallerSlot   string
	Face         string
	ToolName     string
	Statuses     []Status
	Lifecycle    Lifecycle
	Commit       Commit
	ProviderType string
	// DeliveryMode filters by delivery (inline, async_job: the jobs).
	DeliveryMode  string
	SortBy        string // default started_at
	Asc           bool   // default descending
	Limit, Offset int
	// After pages by keyset: only the records that come after this
	// position in the query's order (Cursor and ListPage build it). Not
	// with SortSeq.
	After *Position
	// NoTotal skips the count: List returns -1 for the total. NoSeq skips
	// Seq (every record's is 0): both read the whole account, which a page
	// of a large journal must not.
	NoTotal, NoSeq bool
}

// Replicas is implemented by stores that several processes (replicas)
// share. The journal uses it for a read barrier: a reader asks every live
// replica to apply its spool and waits until each has, so that it sees
// every call that has returned anywhere, although replicas apply their
// spools in the background.
type Replicas interface {
	// Shared reports whether the store is shared at all (a SQLite file is
	// one server's own).
	Shared() bool
	// Join and Leave add and remove a replica.
	Join(ctx context.Context, instanceID string) error
	Leave(ctx context.Context, instanceID string) error
	// RequestFlush asks every replica to apply its spool and returns the
	// request's number, which grows with every request.
	RequestFlush(ctx context.Context) (int64, error)
	// Lagging returns the replicas other than self that have not yet
	// answered request.
	Lagging(ctx context.Context, self string, request int64) ([]string, error)
	// Ack records that instanceID has applied everything it spooled before
	// it heard request.
	Ack(ctx context.Context, instanceID string, request int64) error
	// ListenFlush calls fn with each request number it hears, until ctx
	// ends, reporting trouble to onErr.
	ListenFlush(ctx context.Context, fn func(request int64), onErr func(error))
}
