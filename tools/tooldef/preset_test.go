package tooldef

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPresetsAreCheckedLikeAPost(t *testing.T) {
	rules := Rules{Slots: []string{"narrator"}, Reserved: func(n string) bool { return n == "roll_dice" }}
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		in   []Input
		err  string
	}{
		{"ok", []Input{{Name: str("a")}, {Name: str("b"), AllowedSlots: &[]string{"narrator"}}}, ""},
		{"no name", []Input{{Description: str("x")}}, "name: is required"},
		{"a builtin's name", []Input{{Name: str("roll_dice")}}, "builtin"},
		{"twice", []Input{{Name: str("a")}, {Name: str("a")}}, "a second preset named a"},
		{"source set", []Input{{Name: str("a"), Source: str("custom")}}, "source and source_id"},
		{"source_id set", []Input{{Name: str("a"), SourceID: json.RawMessage(`"x"`)}}, "source and source_id"},
		{"unknown slot", []Input{{Name: str("a"), AllowedSlots: &[]string{"villain"}}}, "allowed_slots"},
		{"parameters not an object schema", []Input{{Name: str("a"), Parameters: json.RawMessage(`{"type":"string"}`)}}, "parameters"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := rules.Presets(c.in, time.Now())
			if c.err == "" {
				if err != nil || len(got) != len(c.in) || got[0].Source != SourcePreset || got[0].ID != PresetID(got[0].Name) || !got[0].Enabled {
					t.Fatalf("%+v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want one saying %q", err, c.err)
			}
		})
	}
}

func TestPresetStoreNeverWritesAPreset(t *testing.T) {
	ctx := context.Background()
	name := "p"
	ps, err := Rules{}.Presets([]Input{{Name: &name}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := WithPresets(NewMemStore(), ps)
	d, err := s.GetDefinition(ctx, "any", PresetID("p"))
	if err != nil || d.AccountID != "any" {
		t.Fatalf("%+v, %v", d, err)
	}
	d.Description = "changed"
	if err := s.UpdateDefinition(ctx, d); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("update: %v", err)
	}
	if err := s.DeleteDefinition(ctx, "any", PresetID("p")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("delete: %v", err)
	}
	if d, _ := s.GetDefinition(ctx, "other", PresetID("p")); d.Description != "" {
		t.Fatalf("a write reached the preset: %+v", d)
	}
}
