package mcpremote_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// Every basis a remote tool's governance can have, each where it applies:
// the tool's annotations (tool_declared), the account's override
// (account_override), the server's defaults (server_default), the
// platform's (platform_default); and the schema as listed
// (tool_declared) or projected (shallow_schema_projection), each with its
// scope in metadata_basis_detail.
func TestRemoteBasesFollowWhatDecided(t *testing.T) {
	up := startUpstream(t, false)
	up.ts.AddHostileSchemas()
	// Listing the hostile schemas (1.2 MB, 1000 deep) takes seconds under
	// the race detector on a busy machine: the probe gets a bound no
	// listing here comes near, not the rig's one second.
	r := newRig(t, mcpremote.Options{ProbeTimeout: 2 * time.Minute})
	r.register("acct_a", "demo", up.url(), func(s *mcpremote.Server, _ *mcpremote.Secrets) {
		s.Defaults = mcpremote.Defaults{SideEffectLevel: ptr("sandbox"), AllowedSlots: &[]string{"narrator", "director"}}
		s.Tools = map[string]mcpremote.Override{"add": {SideEffectLevel: ptr("irreversible"), AllowedSlots: &[]string{"memory"}}}
	})
	r.register("acct_b", "plain", up.url(), nil)
	cat := r.runtime("acct_a")
	type want struct {
		side, sideBasis, slotsBasis, schemaBasis string
		slots                                    []string
	}
	for name, w := range map[string]want{
		// readOnlyHint decides; the server's default slots apply.
		"demo__echo": {"none", tools.BasisDeclared, tools.BasisServerDefault, tools.BasisDeclared, []string{"narrator", "director"}},
		// No annotations: the server's default side-effect level.
		"demo__write": {"sandbox", tools.BasisServerDefault, tools.BasisServerDefault, tools.BasisDeclared, []string{"narrator", "director"}},
		// The account's override beats both.
		"demo__add":        {"irreversible", tools.BasisAccountOverride, tools.BasisAccountOverride, tools.BasisDeclared, []string{"memory"}},
		"demo__deepschema": {"none", tools.BasisDeclared, tools.BasisServerDefault, tools.BasisShallowProjection, []string{"narrator", "director"}},
		"demo__hugeschema": {"none", tools.BasisDeclared, tools.BasisServerDefault, tools.BasisShallowProjection, []string{"narrator", "director"}},
		"demo__cyclic":     {"none", tools.BasisDeclared, tools.BasisServerDefault, tools.BasisShallowProjection, []string{"narrator", "director"}},
	} {
		rt := find(cat, name)
		if rt == nil {
			t.Fatalf("%s is not in the catalog: %+v", name, cat.Conflicts)
		}
		if rt.SideEffectLevel != w.side || rt.SideEffectLevelBasis != w.sideBasis || rt.AllowedSlotsBasis != w.slotsBasis ||
			rt.ParameterSchemaBasis != w.schemaBasis || strings.Join(rt.AllowedSlots, ",") != strings.Join(w.slots, ",") {
			t.Errorf("%s: %+v, want %+v", name, rt, w)
		}
		scopes := map[string]string{tools.BasisDeclared: "tool", tools.BasisAccountOverride: "account", tools.BasisServerDefault: "server",
			tools.BasisPlatform: "platform", tools.BasisShallowProjection: "projection"}
		for field, basis := range map[string]string{"side_effect_level": w.sideBasis, "allowed_slots": w.slotsBasis, "parameter_schema": w.schemaBasis} {
			if d := rt.MetadataBasisDetail[field]; d.Basis != basis || d.Scope != scopes[basis] {
				t.Errorf("%s: metadata_basis_detail.%s = %+v, want %s/%s", name, field, d, basis, scopes[basis])
			}
		}
	}
	// Without defaults, the platform's.
	cat = r.runtime("acct_b")
	if w := find(cat, "plain__write"); w == nil || w.SideEffectLevelBasis != tools.BasisPlatform || w.SideEffectLevel != "irreversible" ||
		w.AllowedSlotsBasis != tools.BasisPlatform || w.MetadataBasisDetail["side_effect_level"].Scope != "platform" {
		t.Fatalf("plain__write: %+v", w)
	}

	// The projected schemas are what the pipeline validates against: a
	// nested value below a projected property passes to the server,
	// which has the last word; a missing required property is still
	// refused before the call leaves.
	out, err := r.exec.Execute(t.Context(), tools.Proposal{Tool: "demo__cyclic", Args: []byte(`{"name":"x","tree":{"children":[{"children":[]}]}}`),
		Caller: tools.Caller{SessionID: "sess_1", Face: "mcp", Slot: "narrator", Identity: identityOf("acct_a")}})
	if err != nil || out.IsError || !strings.Contains(out.Text, `"children"`) {
		t.Fatalf("cyclic: %v %+v", err, out)
	}
	out, err = r.exec.Execute(t.Context(), tools.Proposal{Tool: "demo__deepschema", Args: []byte(`{"x":{"x":{"x":"deep"}}}`),
		Caller: tools.Caller{SessionID: "sess_1", Face: "mcp", Slot: "narrator", Identity: identityOf("acct_a")}})
	if err != nil || out.IsError {
		t.Fatalf("deepschema: %v %+v", err, out)
	}
	out, err = r.exec.Execute(t.Context(), tools.Proposal{Tool: "demo__hugeschema", Args: []byte(`{"p00001":"a"}`),
		Caller: tools.Caller{SessionID: "sess_1", Face: "mcp", Slot: "narrator", Identity: identityOf("acct_a")}})
	if err != nil || out.Code != tools.CodeInvalidArgs || !strings.Contains(out.Message, "p00000") {
		t.Fatalf("hugeschema without its required property: %v %+v", err, out)
	}
	// The server's default slots hold at the call.
	out, err = r.exec.Execute(t.Context(), tools.Proposal{Tool: "demo__echo", Args: []byte(`{"message":"hi"}`),
		Caller: tools.Caller{SessionID: "sess_1", Face: "mcp", Slot: "memory", Identity: identityOf("acct_a")}})
	if err != nil || !out.IsError || out.Code != "permission_denied" {
		t.Fatalf("echo from a slot the server's defaults leave out: %v %+v", err, out)
	}
}

func identityOf(account string) identity.Identity { return identity.Identity{AccountID: account} }
