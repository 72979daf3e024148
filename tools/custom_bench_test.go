package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// BenchmarkCustomToolLookup is what finding a custom tool costs a call
// (the definition read from SQLite, or from the definitions cache serve
// puts in front of it; its compiled schema from the cache), with 50
// definitions in the account:
//
//	go test -run '^$' -bench CustomToolLookup -benchmem ./tools/
func BenchmarkCustomToolLookup(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	for i := range 50 {
		d := tooldef.Definition{ID: fmt.Sprint("tooldef_", i), AccountID: tools.LocalAccount, Name: fmt.Sprint("lookup_", i),
			Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`), SideEffectLevel: "none",
			AllowedSlots: []string{}, Source: tooldef.SourceCustom, Enabled: true, CreatedAt: now, UpdatedAt: now}
		if err := db.CreateDefinition(ctx, d, 0); err != nil {
			b.Fatal(err)
		}
	}
	for name, defs := range map[string]tooldef.Store{"sqlite": db, "cached": tooldef.NewCache(db, time.Second, nil)} {
		b.Run(name, func(b *testing.B) {
			e, err := tools.NewExecutor(tools.Options{Definitions: defs})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if !e.HasDefinition(ctx, tools.LocalAccount, "", "lookup_7") {
					b.Fatal("not found")
				}
			}
		})
	}
}
