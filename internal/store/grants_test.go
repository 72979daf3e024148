package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
)

func TestGrantsStoreCodesAndRefreshTokensAreSingleUse(t *testing.T) {
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			c := identity.Client{ID: "cli_1", Name: "Inspector", AuthMethod: "none", RedirectURIs: []string{"http://127.0.0.1/cb"}, Native: true, CreatedAt: now}
			if err := db.CreateClient(ctx, c); err != nil {
				t.Fatal(err)
			}
			got, err := db.Client(ctx, "cli_1")
			if err != nil || got.Name != "Inspector" || !got.Native || got.RedirectURIs[0] != "http://127.0.0.1/cb" {
				t.Fatalf("client = %+v, %v", got, err)
			}
			if _, err := db.Client(ctx, "nope"); !errors.Is(err, identity.ErrNotFound) {
				t.Fatalf("unknown client: %v", err)
			}
			r := identity.Request{ID: "req_1", ClientID: "cli_1", Data: []byte(`{"x":1}`), CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
			if err := db.CreateRequest(ctx, r); err != nil {
				t.Fatal(err)
			}
			g := identity.Grant{ID: "gr_1", AccountID: "acme", KeyID: "key_1", ClientID: "cli_1", Scopes: []string{"mcp"}, Resource: "http://127.0.0.1/mcp", CreatedAt: now}
			if err := db.Approve(ctx, "req_1", g); err != nil {
				t.Fatal(err)
			}
			if err := db.Approve(ctx, "req_1", identity.Grant{ID: "gr_2", ClientID: "cli_1", CreatedAt: now}); err == nil {
				t.Fatal("a request was approved twice")
			}
			if err := db.SetCode(ctx, "req_1", identity.Hash("code")); err != nil {
				t.Fatal(err)
			}
			// Ten concurrent exchanges of one code: exactly one wins.
			var wins atomic.Int32
			var wg sync.WaitGroup
			for range 10 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, err := db.ConsumeCode(ctx, identity.Hash("code"), now)
					switch {
					case err == nil && req.GrantID == "gr_1":
						wins.Add(1)
					case errors.Is(err, identity.ErrUsed):
					default:
						t.Errorf("consume: %v", err)
					}
				}()
			}
			wg.Wait()
			if wins.Load() != 1 {
				t.Fatalf("%d exchanges of one code succeeded", wins.Load())
			}
			if _, err := db.ConsumeCode(ctx, identity.Hash("other"), now); !errors.Is(err, identity.ErrNotFound) {
				t.Fatalf("unknown code: %v", err)
			}

			rt := identity.Token{Hash: identity.Hash("rt"), Kind: identity.KindRefresh, GrantID: "gr_1", ClientID: "cli_1", Scopes: []string{"mcp"}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			at := identity.Token{Hash: identity.Hash("at"), Kind: identity.KindAccess, GrantID: "gr_1", ClientID: "cli_1", Scopes: []string{"mcp"}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			for _, tok := range []identity.Token{rt, at} {
				if err := db.CreateToken(ctx, tok); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := db.UseRefresh(ctx, rt.Hash, now); err != nil {
				t.Fatal(err)
			}
			if _, err := db.UseRefresh(ctx, rt.Hash, now); !errors.Is(err, identity.ErrUsed) {
				t.Fatalf("second rotation: %v", err)
			}
			if err := db.RevokeGrant(ctx, "gr_1", now); err != nil {
				t.Fatal(err)
			}
			tok, err := db.Token(ctx, at.Hash)
			if err != nil || tok.RevokedAt == nil {
				t.Fatalf("access token after grant revocation: %+v, %v", tok, err)
			}
			list, err := db.ListGrants(ctx, "acme")
			if err != nil || len(list) != 1 || list[0].RevokedAt == nil || list[0].ClientName != "Inspector" {
				t.Fatalf("grants = %+v, %v", list, err)
			}
			if l, _ := db.ListGrants(ctx, "other"); len(l) != 0 {
				t.Fatalf("another account sees %d grants", len(l))
			}
			doc := identity.Client{ID: "https://app.example/client.json", Name: "v1", AuthMethod: "none", RedirectURIs: []string{"https://app.example/cb"}, CreatedAt: now}
			if err := db.PutClient(ctx, doc); err != nil {
				t.Fatal(err)
			}
			doc.Name, doc.RedirectURIs = "v2", []string{"https://app.example/cb2"}
			if err := db.PutClient(ctx, doc); err != nil {
				t.Fatal(err)
			}
			if got, err := db.Client(ctx, doc.ID); err != nil || got.Name != "v2" || got.RedirectURIs[0] != "https://app.example/cb2" {
				t.Fatalf("replaced client = %+v, %v", got, err)
			}
			p1, err := db.SigningKey(ctx, "k1", "first", now)
			p2, err2 := db.SigningKey(ctx, "k1", "second", now)
			if err != nil || err2 != nil || p1 != "first" || p2 != "first" {
				t.Fatalf("signing key = %q %q (%v %v)", p1, p2, err, err2)
			}
		})
	}
}
