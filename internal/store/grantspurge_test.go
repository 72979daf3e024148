package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
)

// purgeFixture puts the clients of the purge tests in db: each named for
// its state, registered, used and issued tokens at fixed times before now.
type purgeFixture struct {
	t   *testing.T
	db  *DB
	now time.Time
}

func (f purgeFixture) client(id string, usedAgo time.Duration) {
	f.t.Helper()
	c := identity.Client{ID: id, Name: id, AuthMethod: "none", RedirectURIs: []string{"http://127.0.0.1/cb"}, Native: true, CreatedAt: f.now.Add(-usedAgo)}
	if err := f.db.CreateClient(context.Background(), c); err != nil {
		f.t.Fatal(err)
	}
}

// grant consents for id at `ago` (a request, its approval) and issues
// tokens then, expiring after ttl; revoked revokes the grant.
func (f purgeFixture) grant(id string, ago, ttl time.Duration, tokens int, revoked bool) {
	f.t.Helper()
	ctx := context.Background()
	at := f.now.Add(-ago)
	r := identity.Request{ID: "req_" + id, ClientID: id, Data: []byte(`{}`), CreatedAt: at, ExpiresAt: at.Add(10 * time.Minute)}
	if err := f.db.CreateRequest(ctx, r); err != nil {
		f.t.Fatal(err)
	}
	g := identity.Grant{ID: "gr_" + id, AccountID: "acme", KeyID: "key_1", ClientID: id, Scopes: []string{"mcp"}, Resource: "http://127.0.0.1/mcp", CreatedAt: at}
	if err := f.db.Approve(ctx, r.ID, g); err != nil {
		f.t.Fatal(err)
	}
	for i := range tokens {
		tok := identity.Token{Hash: identity.Hash(fmt.Sprintf("%s-%d", id, i)), Kind: identity.KindRefresh, GrantID: g.ID, ClientID: id,
			Scopes: []string{"mcp"}, CreatedAt: at, ExpiresAt: at.Add(ttl)}
		if err := f.db.CreateToken(ctx, tok); err != nil {
			f.t.Fatal(err)
		}
	}
	if revoked {
		if err := f.db.RevokeGrant(ctx, g.ID, at); err != nil {
			f.t.Fatal(err)
		}
	}
}

// PurgeClients deletes a client never issued a token once unused past
// UnauthorizedBefore, and one with no valid token once unused past
// IdleBefore, with their grants, tokens and requests; it keeps every client
// used since, or holding a valid token, and one whose authorization is
// under way; a deleted client cannot start an authorization or get a
// token; and purging twice changes nothing.
func TestGrantsStorePurgesExpiredClients(t *testing.T) {
	const day = 24 * time.Hour
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			f := purgeFixture{t: t, db: db, now: now}
			e := identity.ClientExpiry{Now: now, UnauthorizedBefore: now.Add(-day), IdleBefore: now.Add(-90 * day)}

			f.client("registered_lately", 23*time.Hour)
			f.client("registered_long_ago", 25*time.Hour)
			f.client("mid_authorization", 3*day) // registered long ago, its request just created
			if err := db.CreateRequest(ctx, identity.Request{ID: "req_mid", ClientID: "mid_authorization", Data: []byte(`{}`),
				CreatedAt: now.Add(-time.Minute), ExpiresAt: now.Add(9 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			f.client("consented_code_never_exchanged", 2*day)
			f.grant("consented_code_never_exchanged", 2*day, 0, 0, false)
			f.client("active", 200*day) // its refresh token is valid for another 165 days
			f.grant("active", 200*day, 365*day, 2, false)
			f.client("expired_lately", 30*day) // every token expired, last used 30 days ago
			f.grant("expired_lately", 30*day, time.Hour, 2, false)
			f.client("expired_long_ago", 100*day)
			f.grant("expired_long_ago", 100*day, 720*time.Hour, 2, false)
			f.client("revoked_long_ago", 100*day) // tokens valid for years, but revoked
			f.grant("revoked_long_ago", 100*day, 3650*day, 1, true)
			f.client("revoked_lately", 10*day)
			f.grant("revoked_lately", 10*day, 3650*day, 1, true)
			doc := identity.Client{ID: "https://app.example/client.json", Name: "doc", AuthMethod: "none", RedirectURIs: []string{"https://app.example/cb"}, CreatedAt: now.Add(-2 * day)}
			if err := db.PutClient(ctx, doc); err != nil {
				t.Fatal(err)
			}

			n, err := db.PurgeClients(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			gone := []string{"registered_long_ago", "consented_code_never_exchanged", "expired_long_ago", "revoked_long_ago", doc.ID}
			kept := []string{"registered_lately", "mid_authorization", "active", "expired_lately", "revoked_lately"}
			if n != len(gone) {
				t.Errorf("purged %d clients, want %d", n, len(gone))
			}
			for _, id := range gone {
				if _, err := db.Client(ctx, id); !errors.Is(err, identity.ErrNotFound) {
					t.Errorf("client %s after the purge: %v, want not found", id, err)
				}
			}
			for _, id := range kept {
				if _, err := db.Client(ctx, id); err != nil {
					t.Errorf("client %s after the purge: %v, want kept", id, err)
				}
			}
			// What the deleted clients held went with them; the kept keep theirs.
			for _, h := range []string{"expired_long_ago-0", "expired_long_ago-1", "revoked_long_ago-0"} {
				if _, err := db.Token(ctx, identity.Hash(h)); !errors.Is(err, identity.ErrNotFound) {
					t.Errorf("token %s of a purged client: %v", h, err)
				}
			}
			if _, err := db.Token(ctx, identity.Hash("active-1")); err != nil {
				t.Errorf("token of the active client: %v", err)
			}
			list, err := db.ListGrants(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, g := range list {
				left = append(left, g.ClientID)
			}
			if len(left) != 3 {
				t.Errorf("grants left for clients %v, want those of active, expired_lately and revoked_lately", left)
			}
			if _, err := db.Request(ctx, "req_consented_code_never_exchanged"); !errors.Is(err, identity.ErrNotFound) {
				t.Errorf("request of a purged client: %v", err)
			}

			// The authorization under way completes.
			g := identity.Grant{ID: "gr_mid", AccountID: "acme", KeyID: "key_1", ClientID: "mid_authorization", Scopes: []string{"mcp"}, Resource: "http://127.0.0.1/mcp", CreatedAt: now}
			if err := db.Approve(ctx, "req_mid", g); err != nil {
				t.Fatal(err)
			}
			if err := db.SetCode(ctx, "req_mid", identity.Hash("mid-code")); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ConsumeCode(ctx, identity.Hash("mid-code"), now); err != nil {
				t.Fatal(err)
			}
			if err := db.CreateToken(ctx, identity.Token{Hash: identity.Hash("mid-token"), Kind: identity.KindAccess, GrantID: g.ID,
				ClientID: "mid_authorization", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}

			// A deleted client can start nothing; its metadata document can
			// be stored again.
			err = db.CreateRequest(ctx, identity.Request{ID: "req_late", ClientID: "registered_long_ago", Data: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Minute)})
			if !errors.Is(err, identity.ErrNotFound) {
				t.Errorf("a request for a purged client: %v, want not found", err)
			}
			doc.CreatedAt = now // fetched again now
			if err := db.PutClient(ctx, doc); err != nil {
				t.Errorf("the metadata document client again: %v", err)
			}
			if n, err := db.PurgeClients(ctx, e); err != nil || n != 0 {
				t.Errorf("a second purge deleted %d (%v), want 0", n, err)
			}
		})
	}
}

// More expired clients than one batch all go, and none of the others.
func TestGrantsStorePurgesABacklogInBatches(t *testing.T) {
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			now := time.Now().UTC().Truncate(time.Millisecond)
			f := purgeFixture{t: t, db: db, now: now}
			for i := range purgeBatch + 7 {
				f.client(fmt.Sprintf("stale_%04d", i), 48*time.Hour)
			}
			f.client("fresh", time.Hour)
			n, err := db.PurgeClients(context.Background(), identity.ClientExpiry{Now: now, UnauthorizedBefore: now.Add(-24 * time.Hour), IdleBefore: now.Add(-24 * time.Hour)})
			if err != nil || n != purgeBatch+7 {
				t.Fatalf("purged %d (%v), want %d", n, err, purgeBatch+7)
			}
			var left int
			if err := db.SQL().QueryRow(`SELECT count(*) FROM oauth_clients`).Scan(&left); err != nil || left != 1 {
				t.Fatalf("%d clients left (%v), want the fresh one", left, err)
			}
		})
	}
}

// A purge racing authorizations that start on expired clients never
// leaves half of one: each request either exists with its client, or was
// refused because its client had gone.
func TestGrantsStorePurgeRacingAuthorizationsLeavesNoOrphans(t *testing.T) {
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			f := purgeFixture{t: t, db: db, now: now}
			const n = 40
			for i := range n {
				f.client(fmt.Sprintf("racer_%02d", i), 48*time.Hour)
			}
			e := identity.ClientExpiry{Now: now, UnauthorizedBefore: now.Add(-24 * time.Hour), IdleBefore: now.Add(-24 * time.Hour)}
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("racer_%02d", i)
					err := db.CreateRequest(ctx, identity.Request{ID: "req_" + id, ClientID: id, Data: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)})
					if err != nil && !errors.Is(err, identity.ErrNotFound) {
						t.Errorf("request for %s: %v", id, err)
					}
				}()
				if i%8 == 0 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := db.PurgeClients(ctx, e); err != nil {
							t.Errorf("purge: %v", err)
						}
					}()
				}
			}
			wg.Wait()
			var orphans int
			if err := db.SQL().QueryRow(`SELECT count(*) FROM oauth_requests r
				WHERE NOT EXISTS (SELECT 1 FROM oauth_clients c WHERE c.id = r.client_id)`).Scan(&orphans); err != nil || orphans != 0 {
				t.Fatalf("%d requests without their client (%v)", orphans, err)
			}
			// Every client that kept its request was used just now: kept.
			if k, err := db.PurgeClients(ctx, e); err != nil || k != 0 {
				t.Fatalf("a purge after the race deleted %d (%v): a client with a fresh request", k, err)
			}
		})
	}
}
