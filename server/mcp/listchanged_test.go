package mcp_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// A sync that adds two tools and removes one is one change of the tool
// set, and each session hears of it once, after all of it — however long
// the machine pauses between the sync's changes. Here it pauses a second
// of the fake clock after each, far past the go-sdk's 10 ms debounce of
// list_changed, whose timer therefore fires in the middle of the sync.
// Sessions of both protocols are watched: the one before 2026-07-28
// (list_changed on the session's stream) and the one after (on its
// subscriptions/listen stream).
func TestASlowSyncIsOneListChangedForEachSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		defs := tooldef.NewMemStore()
		at := time.UnixMilli(1_800_000_000_000)
		define := func(id, name string) {
			d := tooldef.New()
			d.ID, d.AccountID, d.Name, d.CreatedAt, d.UpdatedAt = id, "acme", name, at, at
			if err := defs.CreateDefinition(ctx, d, 0); err != nil {
				t.Fatal(err)
			}
		}
		define("tooldef_old", "old_tool")
		exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Definitions: defs}, builtin.All()...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(exec.Journal().Close) // its writer is a goroutine of the bubble
		face := mcpface.New(exec, mcpface.Options{})
		// heard counts every session's list_changed; midSync is what
		// they had heard at the sync's pauses, once the SDK's timer had
		// fired and all it sent had arrived.
		var pauses, heard, midSync atomic.Int64
		mcpface.OnSyncChange(face, func(string) {
			pauses.Add(1)
			time.Sleep(time.Second)
			midSync.Store(max(midSync.Load(), heard.Load()))
		})
		srv := mcpface.ServerFor(ctx, face, "acme")

		type watched struct {
			cs   *sdk.ClientSession
			told atomic.Int64
		}
		watch := func(version string) *watched {
			w := &watched{}
			client := sdk.NewClient(&sdk.Implementation{Name: "watcher", Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
					w.told.Add(1)
					heard.Add(1)
				},
			})
			st, ct := sdk.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cs.Close()
				_ = ss.Wait()
			})
			w.cs = cs
			return w
		}
		legacy, modern := watch("2025-11-25"), watch("")
		if v := legacy.cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Fatalf("the legacy session speaks %s", v)
		}
		synctest.Wait()

		define("tooldef_a", "new_a")
		define("tooldef_b", "new_b")
		if err := defs.DeleteDefinition(ctx, "acme", "tooldef_old"); err != nil {
			t.Fatal(err)
		}
		pauses.Store(0)
		face.DefinitionsChanged("acme")
		if n := pauses.Load(); n != 3 {
			t.Fatalf("the sync made %d changes, want 3 (two adds, one removal)", n)
		}
		if n := midSync.Load(); n != 0 {
			t.Errorf("the sessions heard %d list_changed in the middle of the sync, before its tools were all there", n)
		}
		time.Sleep(time.Second) // past any debounce
		synctest.Wait()
		for _, w := range []*watched{legacy, modern} {
			v := w.cs.InitializeResult().ProtocolVersion
			if n := w.told.Load(); n != 1 {
				t.Errorf("the %s session got %d list_changed for one change of the tool set, want 1", v, n)
			}
			res, err := w.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			if !slices.Contains(names, "new_a") || !slices.Contains(names, "new_b") || slices.Contains(names, "old_tool") {
				t.Errorf("the %s session's tools/list after the change: %v", v, names)
			}
		}
	})
}
