package tools_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// definitionStores are the stores definitions live in: SQLite and, when
// TOOLHOST_TEST_POSTGRES is set, PostgreSQL.
func definitionStores(t *testing.T) map[string]*store.DB { return storetest.Open(t, "defcache_test") }

func names(specs []catalog.Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// TestDefinitionCacheSeesWritesAtOnce: with the definitions cache the
// serve command uses, a create, update, toggle and delete through the
// same store is what the very next lookup and tools/list see, and one
// account never sees another's definitions.
func TestDefinitionCacheSeesWritesAtOnce(t *testing.T) {
	for name, db := range definitionStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			// An hour's TTL: anything seen below comes from invalidation,
			// not expiry.
			defs := tooldef.NewCache(db, time.Hour, nil)
			e, err := tools.NewExecutor(tools.Options{Definitions: defs})
			if err != nil {
				t.Fatal(err)
			}
			const a, b = "acct_a", "acct_b"
			check := func(step, account string, want ...string) {
				t.Helper()
				specs, err := e.CustomSpecs(ctx, account)
				if err != nil {
					t.Fatal(err)
				}
				if got := names(specs); !slices.Equal(got, want) {
					t.Fatalf("%s: %s lists %v, want %v", step, account, got, want)
				}
				for _, n := range []string{"echo", "other"} {
					if got, want := e.HasDefinition(ctx, account, "", n), slices.Contains(want, n); got != want {
						t.Fatalf("%s: %s HasDefinition(%s) = %v, want %v", step, account, n, got, want)
					}
				}
			}
			check("empty", a)
			check("empty", b)
			now := time.Now()
			d := tooldef.Definition{ID: "tooldef_1", AccountID: a, Name: "echo", Description: "v1",
				Parameters: json.RawMessage(`{"type":"object"}`), SideEffectLevel: "none", AllowedSlots: []string{},
				Source: tooldef.SourceCustom, Enabled: true, CreatedAt: now, UpdatedAt: now}
			if err := defs.CreateDefinition(ctx, d, 0); err != nil {
				t.Fatal(err)
			}
			check("create", a, "echo")
			check("create", b) // tenancy: B's cache entry is its own
			d.Description, d.UpdatedAt = "v2", now.Add(time.Millisecond)
			if err := defs.UpdateDefinition(ctx, d); err != nil {
				t.Fatal(err)
			}
			specs, _ := e.CustomSpecs(ctx, a)
			if len(specs) != 1 || specs[0].Description.EN != "v2" {
				t.Fatalf("update: %+v, want the description v2", specs)
			}
			d.Enabled, d.UpdatedAt = false, now.Add(2*time.Millisecond)
			if err := defs.UpdateDefinition(ctx, d); err != nil {
				t.Fatal(err)
			}
			check("toggle off", a)
			d.Enabled, d.UpdatedAt = true, now.Add(3*time.Millisecond)
			if err := defs.UpdateDefinition(ctx, d); err != nil {
				t.Fatal(err)
			}
			check("toggle on", a, "echo")
			bd := d
			bd.ID, bd.AccountID, bd.Name = "tooldef_2", b, "other"
			if err := defs.CreateDefinition(ctx, bd, 0); err != nil {
				t.Fatal(err)
			}
			check("B creates", a, "echo")
			check("B creates", b, "other")
			if err := defs.DeleteDefinition(ctx, a, d.ID); err != nil {
				t.Fatal(err)
			}
			check("delete", a)
			check("delete", b, "other")
			// A failed write (B deleting A's id) changes nothing.
			if err := defs.DeleteDefinition(ctx, b, "tooldef_1"); err == nil {
				t.Fatal("B deleted a definition it does not own")
			}
			check("foreign delete", b, "other")
		})
	}
}

// TestDefinitionCacheOtherReplica: two servers on one database each have
// their own cache; a write on one reaches the other once its entry
// expires (the TTL is the bound the docs state), and the REST API's paged
// lists are never cached.
func TestDefinitionCacheOtherReplica(t *testing.T) {
	for name, db := range definitionStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			const ttl = 50 * time.Millisecond
			clockAt := time.Unix(1_700_000_000, 0)
			clock := func() time.Time { return clockAt }
			one, two := tooldef.NewCache(db, ttl, clock), tooldef.NewCache(db, ttl, clock)
			on := true
			q := tooldef.Query{AccountID: "acct_r", Enabled: &on}
			if got, _, err := two.ListDefinitions(ctx, q); err != nil || len(got) != 0 {
				t.Fatalf("before: %v %v", got, err)
			}
			now := clockAt
			if err := one.CreateDefinition(ctx, tooldef.Definition{ID: "tooldef_r", AccountID: "acct_r", Name: "echo",
				Parameters: json.RawMessage(`{"type":"object"}`), SideEffectLevel: "none", AllowedSlots: []string{},
				Source: tooldef.SourceCustom, Enabled: true, CreatedAt: now, UpdatedAt: now}, 0); err != nil {
				t.Fatal(err)
			}
			paged := q
			paged.Limit = 50
			if got, total, err := two.ListDefinitions(ctx, paged); err != nil || total != 1 || len(got) != 1 {
				t.Fatalf("paged list on the other replica: %v %d %v, want the new definition at once", got, total, err)
			}
			clockAt = clockAt.Add(ttl - time.Millisecond)
			if got, _, err := two.ListDefinitions(ctx, q); err != nil || len(got) != 0 {
				t.Fatalf("within the TTL the other replica lists %v %v, want its cached empty list", got, err)
			}
			clockAt = clockAt.Add(time.Millisecond)
			if got, _, err := two.ListDefinitions(ctx, q); err != nil || len(got) != 1 || got[0].Name != "echo" {
				t.Fatalf("after the TTL the other replica lists %v %v, want echo", got, err)
			}
		})
	}
}
