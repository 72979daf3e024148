package admin_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// The typed definition shape writes the bytes the map it replaced wrote
// (encoding/json sorts map keys; the struct declares them sorted), with
// and without the nullable fields.
func TestDefinitionWireBytesUnchanged(t *testing.T) {
	at := time.UnixMilli(1_735_689_600_000)
	for _, d := range []tooldef.Definition{
		{ID: "tooldef_1", Name: "lookup_npc", Description: "根据名字查找 NPC 信息", Parameters: json.RawMessage(`{"type": "object", "properties": {}}`),
			SideEffectLevel: "none", AllowedSlots: []string{"narrator"}, Source: "character", SourceID: "char_1", Enabled: true,
			HandlerType: tooldef.HandlerScript, Handler: json.RawMessage(`{"script":"return 1;"}`), CreatedAt: at, UpdatedAt: at.Add(time.Minute)},
		{ID: "tooldef_2", Name: "x", Parameters: tooldef.DefaultParameters, SideEffectLevel: "none", Source: "custom", CreatedAt: at, UpdatedAt: at},
	} {
		var handler any
		if d.Handler != nil {
			handler = d.Handler
		}
		slots := d.AllowedSlots
		if slots == nil {
			slots = []string{}
		}
		opt := func(s string) any {
			if s == "" {
				return nil
			}
			return s
		}
		old, _ := json.Marshal(map[string]any{
			"id": d.ID, "name": d.Name, "description": d.Description, "parameters": d.Parameters,
			"side_effect_level": d.SideEffectLevel, "allowed_slots": slots, "source": d.Source,
			"source_id": opt(d.SourceID), "enabled": d.Enabled, "handler_type": opt(d.HandlerType),
			"handler": handler, "created_at": d.CreatedAt.UnixMilli(), "updated_at": d.UpdatedAt.UnixMilli(),
		})
		got, err := json.Marshal(admin.DefinitionView(d))
		if err != nil || string(got) != string(old) {
			t.Errorf("%v\n got %s\nwant %s", err, got, old)
		}
	}
}

// The typed session shape writes the bytes of the map it replaced.
func TestSessionWireBytesUnchanged(t *testing.T) {
	at := time.UnixMilli(1_735_689_600_000)
	for _, se := range []session.Session{
		{ID: "s1", Metadata: json.RawMessage(`{"story": "数据"}`), Permissions: session.Default(), CreatedAt: at, UpdatedAt: at,
			Character: &session.Character{ID: "char_1", Name: "Ana", Attributes: json.RawMessage(`{"hp":1}`)}},
		{ID: "s2", Metadata: json.RawMessage(`{}`), Permissions: session.Default(), CreatedAt: at, UpdatedAt: at.Add(time.Second)},
	} {
		old, _ := json.Marshal(map[string]any{"id": se.ID, "metadata": se.Metadata, "tool_permissions": se.Permissions,
			"character": se.Character, "created_at": se.CreatedAt.UnixMilli(), "updated_at": se.UpdatedAt.UnixMilli()})
		got, err := json.Marshal(admin.SessionView(se))
		if err != nil || string(got) != string(old) {
			t.Errorf("%v\n got %s\nwant %s", err, got, old)
		}
	}
}
