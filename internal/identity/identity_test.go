package identity_test

import (
	"context"
	"testing"

	"github.com/toolhost/toolhost/internal/identity"
)

func TestContextCarriesTheIdentity(t *testing.T) {
	if _, ok := identity.FromContext(context.Background()); ok {
		t.Fatal("an empty context carries an identity")
	}
	want := identity.Identity{AccountID: "acme", KeyID: "key_1", Scopes: []string{"mcp", "hosted"}}
	got, ok := identity.FromContext(identity.NewContext(context.Background(), want))
	if !ok || got.AccountID != want.AccountID || got.KeyID != want.KeyID || len(got.Scopes) != 2 {
		t.Fatalf("FromContext = %+v, %v; want %+v", got, ok, want)
	}
	// A zero identity is still an identity: --dev stores one for the local
	// account, and that is not the same as no authentication at all.
	if _, ok := identity.FromContext(identity.NewContext(context.Background(), identity.Identity{})); !ok {
		t.Fatal("a zero identity was lost")
	}
}

func TestHas(t *testing.T) {
	id := identity.Identity{Scopes: []string{"mcp", "hosted"}}
	for _, tc := range []struct {
		scope string
		want  bool
	}{{"mcp", true}, {"hosted", true}, {"admin", false}, {"", false}, {"MCP", false}} {
		if got := id.Has(tc.scope); got != tc.want {
			t.Errorf("Has(%q) = %v, want %v", tc.scope, got, tc.want)
		}
	}
}
