package tools

import (
	"context"
	"fmt"
	"github.com/toolhost/toolhost/tools/approval"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools/session"
)

// BenchmarkSessionCheck is what the session step adds to a call in the
// authorize step: the session from the cache (as in serve), the seed's
// permission rules with slot lists, and the per-turn count.
//
//	go test -run '^$' -bench SessionCheck -benchmem ./tools/
func BenchmarkSessionCheck(b *testing.B) {
	ctx := context.Background()
	mem := session.NewMemStore()
	st := session.NewCache(mem, time.Hour, nil)
	if _, err := mem.TouchSession(ctx, LocalAccount, "s", time.Now()); err != nil {
		b.Fatal(err)
	}
	p := session.Default()
	limit := 1 << 30
	p.MaxCallsPerTurn = &limit
	p.SlotAllowList = map[string][]string{"narrator": {"roll_dice", "get_time", "lookup_npc"}}
	p.SlotDenyList = map[string][]string{"verifier": {"set_variable"}, "narrator": {"web_search"}}
	if err := mem.SetSessionPermissions(ctx, LocalAccount, "s", p, time.Now()); err != nil {
		b.Fatal(err)
	}
	e, err := NewExecutor(Options{Sessions: st})
	if err != nil {
		b.Fatal(err)
	}
	inv := &Invocation{Spec: catalog.Spec{Name: "get_time", SideEffect: catalog.SideEffectNone},
		Caller: Caller{Slot: "narrator", SessionID: "s", FloorID: "f"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%64 == 0 {
			inv.Caller.FloorID = fmt.Sprint("f", i)
		}
		var pol approval.Policy
		te, err := e.checkSession(ctx, LocalAccount, inv, &pol)
		if err != nil || te != nil {
			b.Fatalf("%v %v", err, te)
		}
	}
}
