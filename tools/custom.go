package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// ScriptRunner runs the body of a script handler (a JavaScript function of
// args) and returns the JSON of its return value. A failure the caller
// should see (a throw, a limit) is a *Error.
type ScriptRunner interface {
	RunScript(ctx context.Context, account, script string, args json.RawMessage) (json.RawMessage, error)
}

// Codes of custom tools.
const (
	// CodeScriptsDisabled: the tool has a script handler and the server
	// does not allow them (ENABLE_UNSAFE_SCRIPT_HANDLER).
	CodeScriptsDisabled = "tool_script_handler_disabled"
	// CodeNoHandler: the definition has no handler to run.
	CodeNoHandler = "tool_has_no_handler"
	// CodeScriptError: the script threw; the message is its error.
	CodeScriptError = "script_error"
)

// customEntry is a definition made callable: its entry for the pipeline
// and the definition it came from.
type customEntry struct {
	entry
	def tooldef.Definition
}

// compiled caches definitions' and remote tools' compiled schemas, with
// their top-level properties (for defaults), by id and update time (a
// remote tool: server, name and version): a call parses neither again.
type compiled struct {
	mu sync.Mutex
	m  map[string]compiledSchema
}

// compiledSchema is a compiled input schema and its parsed top-level
// "properties" (read only: shared by every call).
type compiledSchema struct {
	schema *jsonschema.Schema
	props  map[string]any
}

func (c *compiled) get(def tooldef.Definition) (compiledSchema, error) {
	return c.load(def.ID+"@"+strconv.FormatInt(def.UpdatedAt.UnixNano(), 10), def.Name, def.Parameters)
}

// getRemote compiles a remote tool's schema once per server, name and
// version (the version is a digest of the listed tool).
func (c *compiled) getRemote(provider string, spec catalog.Spec) (compiledSchema, error) {
	return c.load(provider+"/"+spec.Name+"@"+spec.Version, spec.Name, spec.Input)
}

func (c *compiled) load(key, name string, raw []byte) (compiledSchema, error) {
	c.mu.Lock()
	s, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	sch, err := compileSchema(name, raw)
	if err != nil {
		return compiledSchema{}, err
	}
	doc, _ := ParseArgs(raw)
	props, _ := doc["properties"].(map[string]any)
	s = compiledSchema{schema: sch, props: props}
	c.mu.Lock()
	if c.m == nil || len(c.m) > 10_000 {
		c.m = map[string]compiledSchema{}
	}
	c.m[key] = s
	c.mu.Unlock()
	return s, nil
}

// definitionSpec is the catalog spec of a definition.
func definitionSpec(def tooldef.Definition) catalog.Spec {
	desc := def.Description
	if desc == "" {
		desc = def.Name
	}
	return catalog.Spec{
		Name: def.Name, Version: "custom." + strconv.FormatInt(def.UpdatedAt.UnixMilli(), 10),
		Title: catalog.Text{EN: def.Name, ZH: def.Name}, Description: catalog.Text{EN: desc, ZH: desc},
		Input: def.Parameters, SideEffect: catalog.SideEffect(def.SideEffectLevel),
		ReplaySafe: def.SideEffectLevel == string(catalog.SideEffectNone),
	}
}

// callable picks, of an account's enabled definitions of one name, the one
// a call runs in a session whose character is character ("" for none): a
// preset (the operator's) first, else the character's own definition,
// else the account's custom one. Another character's definitions are
// never callable.
func callable(defs []tooldef.Definition, character string) (tooldef.Definition, bool) {
	var best tooldef.Definition
	rank := 0
	for _, d := range defs {
		r := 0
		switch {
		case d.Source == tooldef.SourcePreset:
			return d, true
		case d.Source == tooldef.SourceCharacter && character != "" && d.SourceID == character:
			r = 2
		case d.Source == tooldef.SourceCustom:
			r = 1
		}
		if r > rank {
			best, rank = d, r
		}
	}
	return best, rank > 0
}

// visible reports whether a definition belongs to the tools of a session
// whose character is character: the account's custom and the presets
// always, a character definition only in its character's sessions.
func visible(d tooldef.Definition, character string) bool {
	if d.Source == tooldef.SourceCharacter {
		return character != "" && d.SourceID == character
	}
	return d.Source == tooldef.SourceCustom || d.Source == tooldef.SourcePreset
}

// providerOf is the journal's and the catalog's provider of a definition.
// Every definition is a preset provider in the seed's enum (which has no
// value for a definition an account wrote): the id tells the config's
// presets (preset:NAME) from the account's own custom and character
// definitions (tooldef:ID), and the catalog's source says which.
func providerOf(def tooldef.Definition) (typ, id string) {
	if def.Source == tooldef.SourcePreset {
		return journal.ProviderPreset, "preset:" + def.Name
	}
	return journal.ProviderPreset, "tooldef:" + def.ID
}

// customTool looks up the enabled definition a call of name runs in the
// session sessionID ("" for none). The session's character is read only
// when a character definition has that name.
func (e *Executor) customTool(ctx context.Context, account, sessionID, name string) (*customEntry, error) {
	if e.opts.Definitions == nil {
		return nil, nil
	}
	on := true
	defs, _, err := e.opts.Definitions.ListDefinitions(ctx, tooldef.Query{AccountID: account, Name: name, Enabled: &on})
	if err != nil {
		return nil, fmt.Errorf("look up tool definition %s: %w", name, err)
	}
	character := ""
	if slices.ContainsFunc(defs, func(d tooldef.Definition) bool { return d.Source == tooldef.SourceCharacter }) {
		if character, err = e.characterOf(ctx, account, sessionID); err != nil {
			return nil, err
		}
	}
	def, ok := callable(defs, character)
	if !ok {
		return nil, nil
	}
	sch, err := e.schemas.get(def)
	if err != nil {
		return nil, fmt.Errorf("schema of definition %s: %w", def.ID, err)
	}
	return &customEntry{entry: entry{tool: &scriptTool{e: e, def: def}, spec: definitionSpec(def), schema: sch.schema, props: sch.props}, def: def}, nil
}

// characterOf is the id of the character the session plays, "" when the
// call names no session, the session does not exist yet or has none.
func (e *Executor) characterOf(ctx context.Context, account, sessionID string) (string, error) {
	if sessionID == "" || e.opts.Sessions == nil {
		return "", nil
	}
	s, err := e.opts.Sessions.GetSession(ctx, account, sessionID)
	switch {
	case errors.Is(err, session.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("character of session %s: %w", sessionID, err)
	case s.Character == nil:
		return "", nil
	}
	return s.Character.ID, nil
}

// CustomSpecs returns the specs of the account's enabled custom and
// preset tools that a call can reach (one per name, a preset before a
// custom one; a definition shadowed by a builtin is left out), for the MCP
// face's tools/list.
func (e *Executor) CustomSpecs(ctx context.Context, account string) ([]catalog.Spec, error) {
	return e.customSpecs(ctx, account, "")
}

// customSpecs is CustomSpecs in a session whose character is character:
// that character's definitions are among them.
func (e *Executor) customSpecs(ctx context.Context, account, character string) ([]catalog.Spec, error) {
	if e.opts.Definitions == nil {
		return nil, nil
	}
	on := true
	defs, _, err := e.opts.Definitions.ListDefinitions(ctx, tooldef.Query{AccountID: account,
		Enabled: &on, SortBy: tooldef.SortName, Asc: true})
	if err != nil {
		return nil, fmt.Errorf("custom tools of %s: %w", account, err)
	}
	byName := map[string][]tooldef.Definition{}
	var names []string
	for _, d := range defs {
		if !visible(d, character) {
			continue
		}
		if _, ok := byName[d.Name]; !ok {
			names = append(names, d.Name)
		}
		byName[d.Name] = append(byName[d.Name], d)
	}
	var out []catalog.Spec
	for _, n := range names {
		_, builtin := e.tools[n]
		_, session := e.sessionTools[n]
		if d, ok := callable(byName[n], character); ok && !builtin && !session {
			out = append(out, definitionSpec(d))
		}
	}
	return out, nil
}

// HasDefinition reports whether a call of name in the account's session
// sessionID ("" for none) would run one of its enabled definitions.
func (e *Executor) HasDefinition(ctx context.Context, account, sessionID, name string) bool {
	c, err := e.customTool(ctx, account, sessionID, name)
	return err == nil && c != nil
}

// definitionDenial is what keeps a definition from running regardless of
// the session: the script gate and a missing handler.
func (e *Executor) definitionDenial(def tooldef.Definition) *Error {
	switch {
	case def.HandlerType == tooldef.HandlerScript && !e.opts.ScriptsEnabled:
		return Errorf(CodeScriptsDisabled, "%s has a script handler and script handlers are disabled on this server (ENABLE_UNSAFE_SCRIPT_HANDLER is not true)", def.Name)
	case def.HandlerType == "":
		return Errorf(CodeNoHandler, "%s has no handler to run; give it a script handler", def.Name)
	}
	return nil
}

// slotDenial applies a tool's allowed_slots: when not empty, only those
// slots may call it, and a call that declares none may not.
func slotDenial(name, slot string, allowed []string) *session.Denial {
	if len(allowed) == 0 || slices.Contains(allowed, slot) {
		return nil
	}
	if slot == "" {
		return &session.Denial{Rule: "allowed_slots", Message: fmt.Sprintf("%s may be called only by the slots %v; declare one", name, allowed)}
	}
	return &session.Denial{Rule: "allowed_slots", Message: fmt.Sprintf("%s may be called only by the slots %v, not %s", name, allowed, slot)}
}

// scriptTool runs a definition's script handler.
type scriptTool struct {
	e   *Executor
	def tooldef.Definition
}

func (t *scriptTool) Spec() catalog.Spec { return definitionSpec(t.def) }

func (t *scriptTool) Call(ctx context.Context, inv *Invocation) (*Result, error) {
	if t.e.opts.Scripts == nil {
		return nil, Errorf(CodeNoHandler, "this server has no sandbox for script handlers")
	}
	v, err := t.e.opts.Scripts.RunScript(ctx, inv.Caller.AccountID, t.def.Script(), inv.Args)
	if err != nil {
		return nil, err
	}
	var structured any = json.RawMessage(v)
	if len(v) == 0 || v[0] != '{' {
		// structuredContent is an object: other values are wrapped.
		structured = map[string]json.RawMessage{"value": v}
	}
	return &Result{Structured: structured, Summary: t.def.Name}, nil
}
