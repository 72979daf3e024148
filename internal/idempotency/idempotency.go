// Package idempotency keeps the records behind the /v1 Idempotency-Key
// header: which request (by the digest of its body) holds a key, whether it
// is still running, and the response to replay to its retries.
//
// A key is claimed under a lease: the replica running the request renews it
// while it runs, and a replica that dies holding it (kill -9, a lost
// network) hands it over when the lease runs out, so a retry on another
// replica runs the request again within seconds instead of being refused
// for as long as the key is remembered. A finished request's response is
// kept for the store's TTL, within byte caps per account and in all (a
// stream can be megabytes; one account must not evict every other's keys).
//
// Every time a store compares (lease, expiry) is the now its caller passes
// in: one injected clock on the caller's side. Replicas sharing a store must
// keep their clocks within a fraction of the lease of each other (NTP).
//
// The Memory store serves one process; internal/store implements Store on
// SQLite and PostgreSQL for replicas, and idempotencytest is the
// conformance suite both run.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"
)

// Claim is a request's bid for a key.
type Claim struct {
	// Key is the scoped key (account, route and the client's key); stores
	// may keep only its hash.
	Key     string
	Account string
	// Digest identifies the request (SHA-256 of its body): the same key
	// with another digest is a misuse, never a replay.
	Digest [32]byte
	// Owner is the claimant's unique token; only it may renew, complete or
	// release the claim.
	Owner string
}

// Response is what a finished request left to replay.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Outcome is the answer to a claim.
type Outcome int

// Outcomes of Claim.
const (
	// Claimed: the caller holds the key and runs the request.
	Claimed Outcome = iota + 1
	// Replay: the request finished; Result.Response is its answer.
	Replay
	// InFlight: another holder runs it; retry after Result.RetryAfter.
	InFlight
	// Reused: the key is held (or was answered) for another digest.
	Reused
)

// Result is Claim's answer.
type Result struct {
	Outcome  Outcome
	Response Response      // Replay
	Retry    time.Duration // InFlight: until the holder's lease ends
	// TookOver is set on Claimed when the key was held by an owner whose
	// lease had run out (a replica that died mid-request).
	TookOver bool
}

// Store keeps claims and responses. Implementations are safe for
// concurrent use by several processes when they say so (the SQL stores).
type Store interface {
	// Claim takes key for c.Digest with a lease until now+lease, unless it
	// is answered (Replay), held under a live lease (InFlight) or held or
	// answered for another digest (Reused). An answer past its TTL and a
	// claim past its lease are free.
	Claim(ctx context.Context, c Claim, now time.Time, lease time.Duration) (Result, error)
	// Renew extends the owner's lease; false when the claim is no longer
	// the owner's (its lease ran out and another took it).
	Renew(ctx context.Context, key, owner string, now time.Time, lease time.Duration) (bool, error)
	// Complete stores the owner's response for the TTL from now; false
	// when it was not kept (the claim was lost, or the response is larger
	// than an account's share). Older responses are evicted to keep the caps.
	Complete(ctx context.Context, key, owner string, resp Response, now time.Time) (bool, error)
	// Release frees the owner's claim without a response, so a retry runs.
	Release(ctx context.Context, key, owner string) error
}

// Limits bound what a store keeps.
type Limits struct {
	TTL          time.Duration // a response is replayed this long (24 h)
	Entries      int           // responses in all (10 000)
	MaxBytes     int64         // bytes of responses in all (256 MiB)
	AccountBytes int64         // bytes of one account's responses (64 MiB)
}

// Defaults of Limits and of the lease.
const (
	DefaultTTL          = 24 * time.Hour
	DefaultEntries      = 10000
	DefaultMaxBytes     = 256 << 20
	DefaultAccountBytes = 64 << 20
	// DefaultLease is how long a claim outlives its last renewal: the
	// longest a retry waits for a replica that died holding its key.
	DefaultLease = 3 * time.Second
)

// WithDefaults fills the zero fields; AccountBytes is at most MaxBytes.
func (l Limits) WithDefaults() Limits {
	if l.TTL <= 0 {
		l.TTL = DefaultTTL
	}
	if l.Entries <= 0 {
		l.Entries = DefaultEntries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.AccountBytes <= 0 {
		l.AccountBytes = DefaultAccountBytes
	}
	l.AccountBytes = min(l.AccountBytes, l.MaxBytes)
	return l
}

// Size is what a stored response counts against the caps: its body, its
// key and a fixed allowance for the header and the row.
func Size(key string, resp Response) int64 {
	return int64(len(resp.Body) + len(key) + 256)
}

// KeyHash is the hex SHA-256 of a scoped key, the form SQL stores keep (a
// key may hold bytes a text column refuses, NUL included).
func KeyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}
