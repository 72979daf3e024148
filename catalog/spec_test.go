package catalog

import (
	"encoding/json"
	"strings"
	"testing"
)

func valid() Spec {
	return Spec{
		Name: "get_time", Version: "1.0.0",
		Description: Text{ZH: "时间", EN: "time"},
		Input:       json.RawMessage(`{"type":"object"}`),
		SideEffect:  SideEffectNone,
	}
}

func TestSpecCheck(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Spec)
		wantErr string
	}{
		{name: "valid", mutate: func(*Spec) {}},
		{name: "bad name", mutate: func(s *Spec) { s.Name = "Get-Time" }, wantErr: "lower-case"},
		{name: "no version", mutate: func(s *Spec) { s.Version = "" }, wantErr: "empty version"},
		{name: "one language only", mutate: func(s *Spec) { s.Description.ZH = "" }, wantErr: "both zh and en"},
		{name: "unknown side effect", mutate: func(s *Spec) { s.SideEffect = "some" }, wantErr: "side-effect level"},
		{name: "input not object", mutate: func(s *Spec) { s.Input = json.RawMessage(`{"type":"string"}`) }, wantErr: "type object"},
		{name: "input not JSON", mutate: func(s *Spec) { s.Input = json.RawMessage(`{`) }, wantErr: "input schema"},
		{name: "read-only but irreversible", mutate: func(s *Spec) {
			s.Annotations.ReadOnly = true
			s.SideEffect = SideEffectIrreversible
		}, wantErr: "contradicts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid()
			tt.mutate(&s)
			err := s.Check()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRegistryKeepsOrderAndRefusesDuplicates(t *testing.T) {
	r := NewRegistry()
	a, b := valid(), valid()
	b.Name = "roll_dice"
	for _, s := range []Spec{b, a} {
		if err := r.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Add(a); err == nil {
		t.Fatal("duplicate accepted")
	}
	list := r.List()
	if len(list) != 2 || list[0].Name != "roll_dice" || list[1].Name != "get_time" {
		t.Fatalf("List = %v", list)
	}
	if _, ok := r.Lookup("get_time"); !ok {
		t.Fatal("Lookup failed")
	}
	if got := (Text{ZH: "中", EN: "en"}).In(English); got != "en" {
		t.Fatalf("In(English) = %q", got)
	}
	if got := (Text{EN: "only"}).In(Chinese); got != "only" {
		t.Fatalf("fallback = %q", got)
	}
}
