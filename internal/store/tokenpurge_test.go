package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
)

// tok issues a token of kind for the fixture's grant gr_<client> at `ago`,
// expiring after ttl, and returns its hash.
func (f purgeFixture) tok(client, name, kind string, ago, ttl time.Duration, namesGrant bool) string {
	f.t.Helper()
	at := f.now.Add(-ago)
	h := identity.Hash(client + "/" + name)
	if err := f.db.CreateToken(context.Background(), identity.Token{Hash: h, Kind: kind, GrantID: "gr_" + client, ClientID: client,
		Scopes: []string{"mcp"}, CreatedAt: at, ExpiresAt: at.Add(ttl), NamesGrant: namesGrant}); err != nil {
		f.t.Fatal(err)
	}
	return h
}

// PurgeTokens deletes every token that can never be used again — expired,
// revoked, rotated away while naming its grant, an access token beyond a
// grant's newest AccessPerGrant — and keeps every valid one and every
// rotated one whose row is what detects its reuse; the client whose tokens
// all went is still known to have been issued some (it is not expired as
// one never authorized); purging twice changes nothing.
func TestGrantsStorePurgesDeadTokens(t *testing.T) {
	const day = 24 * time.Hour
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			f := purgeFixture{t: t, db: db, now: now}
			f.client("app", 3*day)
			f.grant("app", 3*day, 0, 0, false)
			keep := map[string]string{
				"valid access":                     f.tok("app", "a-valid", identity.KindAccess, time.Minute, time.Hour, false),
				"valid refresh":                    f.tok("app", "r-valid", identity.KindRefresh, time.Minute, 30*day, true),
				"rotated, unnamed, unexpired":      f.tok("app", "r-rot-old", identity.KindRefresh, 2*day, 30*day, false),
				"rotated, unnamed, expired":        f.tok("app", "r-rot-old-exp", identity.KindRefresh, 2*day, day, false),
				"access expiring this millisecond": f.tok("app", "a-edge", identity.KindAccess, time.Hour-time.Millisecond, time.Hour, false),
			}
			gone := map[string]string{
				"expired access":           f.tok("app", "a-exp", identity.KindAccess, 2*time.Hour, time.Hour, false),
				"access expiring now":      f.tok("app", "a-now", identity.KindAccess, time.Hour, time.Hour, false),
				"revoked access":           f.tok("app", "a-rev", identity.KindAccess, time.Minute, time.Hour, false),
				"rotated, named":           f.tok("app", "r-rot", identity.KindRefresh, time.Hour, 30*day, true),
				"expired refresh, unnamed": f.tok("app", "r-exp", identity.KindRefresh, 31*day, 30*day, false),
				"expired refresh, named":   f.tok("app", "r-exp-n", identity.KindRefresh, 31*day, 30*day, true),
				"revoked refresh":          f.tok("app", "r-rev", identity.KindRefresh, time.Minute, 30*day, false),
			}
			for _, h := range []string{keep["rotated, unnamed, unexpired"], keep["rotated, unnamed, expired"], gone["rotated, named"]} {
				if _, err := db.UseRefresh(ctx, h, now.Add(-2*day)); err != nil {
					t.Fatal(err)
				}
			}
			for _, h := range []string{gone["revoked access"], gone["revoked refresh"]} {
				if err := db.RevokeToken(ctx, h, now); err != nil {
					t.Fatal(err)
				}
			}
			// A client issued tokens long ago, all expired: after they are
			// purged it is still one that was authorized.
			f.client("authorized_once", 2*day)
			f.grant("authorized_once", 2*day, time.Hour, 2, false)

			n, err := db.PurgeTokens(ctx, identity.TokenExpiry{Now: now, AccessPerGrant: 10})
			if err != nil {
				t.Fatal(err)
			}
			if want := len(gone) + 2; n != want {
				t.Errorf("purged %d tokens, want %d", n, want)
			}
			for what, h := range keep {
				if _, err := db.Token(ctx, h); err != nil {
					t.Errorf("%s: %v, want kept", what, err)
				}
			}
			for what, h := range gone {
				if _, err := db.Token(ctx, h); !errors.Is(err, identity.ErrNotFound) {
					t.Errorf("%s: %v, want purged", what, err)
				}
			}
			if c, err := db.PurgeClients(ctx, identity.ClientExpiry{Now: now, UnauthorizedBefore: now.Add(-day), IdleBefore: now.Add(-90 * day)}); err != nil || c != 0 {
				t.Errorf("PurgeClients deleted %d (%v): a client whose purged tokens it no longer sees was taken for one never authorized", c, err)
			}
			if n, err := db.PurgeTokens(ctx, identity.TokenExpiry{Now: now, AccessPerGrant: 10}); err != nil || n != 0 {
				t.Errorf("a second purge deleted %d (%v), want 0", n, err)
			}
		})
	}
}

// A grant keeps its AccessPerGrant newest unexpired access tokens; other
// grants' are not counted against it; 0 keeps every one.
func TestGrantsStorePurgeKeepsTheNewestAccessTokensOfAGrant(t *testing.T) {
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			f := purgeFixture{t: t, db: db, now: now}
			f.client("looper", time.Hour)
			f.grant("looper", time.Hour, 0, 0, false)
			f.client("calm", time.Hour)
			f.grant("calm", time.Hour, 0, 0, false)
			var hashes []string
			for i := range 25 { // oldest first, a second apart
				hashes = append(hashes, f.tok("looper", fmt.Sprint(i), identity.KindAccess, time.Duration(25-i)*time.Second, time.Hour, false))
			}
			calm := []string{f.tok("calm", "1", identity.KindAccess, time.Minute, time.Hour, false), f.tok("calm", "2", identity.KindAccess, time.Second, time.Hour, false)}
			if n, err := db.PurgeTokens(ctx, identity.TokenExpiry{Now: now}); err != nil || n != 0 {
				t.Fatalf("AccessPerGrant 0 purged %d valid tokens (%v)", n, err)
			}
			if n, err := db.PurgeTokens(ctx, identity.TokenExpiry{Now: now, AccessPerGrant: 10}); err != nil || n != 15 {
				t.Fatalf("purged %d (%v), want the 15 oldest of the looping grant", n, err)
			}
			for i, h := range hashes {
				_, err := db.Token(ctx, h)
				if i < 15 && !errors.Is(err, identity.ErrNotFound) {
					t.Errorf("access token %d of 25: %v, want purged", i, err)
				}
				if i >= 15 && err != nil {
					t.Errorf("access token %d of 25 (among the newest 10): %v", i, err)
				}
			}
			for _, h := range calm {
				if _, err := db.Token(ctx, h); err != nil {
					t.Errorf("another grant's access token: %v", err)
				}
			}
		})
	}
}

// More dead tokens and expired requests than one batch all go; the live
// ones stay.
func TestGrantsStorePurgesATokenAndRequestBacklogInBatches(t *testing.T) {
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			f := purgeFixture{t: t, db: db, now: now}
			f.client("busy", time.Hour)
			f.grant("busy", 2*time.Hour, 0, 0, false) // its request expired 110 minutes ago
			const backlog = purgeBatch + 7
			tx, err := db.SQL().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range backlog {
				at := now.Add(-2 * time.Hour)
				if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO oauth_tokens (hash, kind, grant_id, client_id, scopes, created_at, expires_at)
					VALUES (?, 'access', 'gr_busy', 'busy', 'mcp', ?, ?)`), fmt.Sprintf("dead-%d", i), msOf(at), msOf(at.Add(time.Hour))); err != nil {
					t.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO oauth_requests (id, client_id, request, created_at, expires_at)
					VALUES (?, 'busy', '{}', ?, ?)`), fmt.Sprintf("req-%d", i), msOf(at), msOf(at.Add(10*time.Minute))); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			live := f.tok("busy", "live", identity.KindAccess, time.Minute, time.Hour, false)
			if err := db.CreateRequest(ctx, identity.Request{ID: "req_pending", ClientID: "busy", Data: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			// Expired 30 minutes ago: within the hour's grace.
			if err := db.CreateRequest(ctx, identity.Request{ID: "req_lately", ClientID: "busy", Data: []byte(`{}`), CreatedAt: now.Add(-40 * time.Minute), ExpiresAt: now.Add(-30 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if n, err := db.PurgeTokens(ctx, identity.TokenExpiry{Now: now, AccessPerGrant: 10}); err != nil || n != backlog {
				t.Fatalf("purged %d tokens (%v), want %d", n, err, backlog)
			}
			if n, err := db.PurgeRequests(ctx, now.Add(-time.Hour)); err != nil || n != backlog+1 {
				t.Fatalf("purged %d requests (%v), want %d (the backlog and the grant's)", n, err, backlog+1)
			}
			if _, err := db.Token(ctx, live); err != nil {
				t.Errorf("the live token: %v", err)
			}
			for _, id := range []string{"req_pending", "req_lately"} {
				if _, err := db.Request(ctx, id); err != nil {
					t.Errorf("request %s: %v, want kept", id, err)
				}
			}
		})
	}
}

// A store upgraded to 0009 keeps knowing which clients were issued a
// token (so one whose tokens are then purged is not expired as never
// authorized), and its refresh tokens, not naming their grant, stay for
// their reuse detection once rotated.
func TestMigration0009BackfillsTokenIssued(t *testing.T) {
	ctx := context.Background()
	for name, d := range unmigrated(t) {
		t.Run(name, func(t *testing.T) {
			migrateTo(ctx, t, d, 8)
			now := time.Now().UTC().Truncate(time.Millisecond)
			old := msOf(now.Add(-48 * time.Hour))
			for _, st := range []struct {
				q    string
				args []any
			}{
				{`INSERT INTO oauth_clients (id, name, auth_method, redirect_uris, created_at, used_at) VALUES ('authorized', 'a', 'none', '[]', ?, ?), ('never', 'n', 'none', '[]', ?, ?)`, []any{old, old, old, old}},
				{`INSERT INTO oauth_grants (id, account_id, key_id, client_id, scopes, resource, created_at) VALUES ('gr_a', 'acme', 'key_1', 'authorized', 'mcp', 'r', ?)`, []any{old}},
				{`INSERT INTO oauth_tokens (hash, kind, grant_id, client_id, scopes, created_at, expires_at, used_at) VALUES
					('rotated', 'refresh', 'gr_a', 'authorized', 'mcp', ?, ?, ?), ('expired', 'access', 'gr_a', 'authorized', 'mcp', ?, ?, NULL)`,
					[]any{old, old + 1000, old + 10, old, old + 1000}},
			} {
				if _, err := d.db.ExecContext(ctx, d.q(st.q), st.args...); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := d.PurgeTokens(ctx, identity.TokenExpiry{Now: now, AccessPerGrant: 10}); err != nil || n != 1 {
				t.Fatalf("purged %d (%v), want the expired access token only", n, err)
			}
			if _, err := d.Token(ctx, "rotated"); err != nil {
				t.Errorf("the rotated refresh token from before 0009: %v, want kept for reuse detection", err)
			}
			n, err := d.PurgeClients(ctx, identity.ClientExpiry{Now: now, UnauthorizedBefore: now.Add(-24 * time.Hour), IdleBefore: now.Add(-90 * 24 * time.Hour)})
			if err != nil || n != 1 {
				t.Fatalf("purged %d clients (%v), want the one never authorized", n, err)
			}
			if _, err := d.Client(ctx, "authorized"); err != nil {
				t.Errorf("the client issued tokens before 0009: %v, want kept until idle_client_ttl", err)
			}
		})
	}
}

// Access tokens issued in the same millisecond (a client refreshing in a
// tight loop, replicas sharing the store) are ranked by the order they
// were created in, not by their hashes: the cap keeps the last ones
// created, whichever the hashes, and purging again keeps the same ones.
func TestGrantsStorePurgeRanksSameMillisecondAccessTokensByCreation(t *testing.T) {
	tests := []struct {
		name string
		// ago of each token, in the order they are created.
		ago  []time.Duration
		keep []int // indexes of the tokens kept (AccessPerGrant 3)
	}{
		{"all in one millisecond", []time.Duration{0, 0, 0, 0, 0, 0, 0, 0}, []int{5, 6, 7}},
		{"the newest millisecond holds more than the cap", []time.Duration{time.Second, time.Second, 0, 0, 0, 0}, []int{3, 4, 5}},
		{"ties across the cap's edge", []time.Duration{2 * time.Second, time.Second, time.Second, time.Second, time.Second, 0}, []int{3, 4, 5}},
		{"an older millisecond created later still ranks by time", []time.Duration{0, 0, time.Second, time.Second, time.Second}, []int{0, 1, 4}},
	}
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			f := purgeFixture{t: t, db: db, now: now}
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					client := fmt.Sprintf("tight_loop_%d", i)
					f.client(client, time.Minute)
					f.grant(client, time.Minute, 0, 0, false)
					var hashes []string
					for j, ago := range tt.ago {
						hashes = append(hashes, f.tok(client, fmt.Sprint(j), identity.KindAccess, ago, time.Hour, false))
					}
					for pass := range 2 {
						if _, err := db.PurgeTokens(ctx, identity.TokenExpiry{Now: now, AccessPerGrant: 3}); err != nil {
							t.Fatal(err)
						}
						var kept []int
						for j, h := range hashes {
							if _, err := db.Token(ctx, h); err == nil {
								kept = append(kept, j)
							} else if !errors.Is(err, identity.ErrNotFound) {
								t.Fatal(err)
							}
						}
						if fmt.Sprint(kept) != fmt.Sprint(tt.keep) {
							t.Fatalf("purge %d kept tokens %v, want %v", pass+1, kept, tt.keep)
						}
					}
				})
			}
		})
	}
}
