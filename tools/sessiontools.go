package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools/session"
)

// The seed's builtins that read or write the caller's session:
// get_character_info (the session's character), get_variable and
// set_variable (its key → JSON value store) and query_memory (a search of
// those variables, querymemory.go). They need the session the
// call names, so they exist only when the executor has a session store
// (and, for the variables, a variable store). They are builtins
// (provider_type builtin) but not catalog entries: GET /tools/builtin
// lists get_character_info only, and the runtime catalog lists them all.

// Codes of the session builtins.
const (
	// CodeSessionRequired: the call named no session.
	CodeSessionRequired = "session_required"
	// CodeNoCharacter: the session has no character.
	CodeNoCharacter = "no_character"
	// CodeVariableLimit: a value too large, or one variable too many.
	CodeVariableLimit = "variable_limit"
)

// SessionToolNames are the names of the session builtins, reserved for
// them.
var SessionToolNames = []string{"get_character_info", "get_variable", "query_memory", "set_variable"}

// SessionSpecs returns the specs of the session builtins this executor
// runs, in name order.
func (e *Executor) SessionSpecs() []catalog.Spec {
	var out []catalog.Spec
	for _, n := range SessionToolNames {
		if ent, ok := e.sessionTools[n]; ok {
			out = append(out, ent.spec)
		}
	}
	return out
}

func (e *Executor) addSessionTools() error {
	if e.opts.Sessions == nil {
		return nil
	}
	ts := []Tool{&characterTool{e: e}}
	if e.opts.Variables != nil {
		ts = append(ts, &getVariable{e: e}, &setVariable{e: e}, &queryMemory{e: e})
	}
	e.sessionTools = map[string]*entry{}
	for _, t := range ts {
		ent, err := newEntry(t)
		if err != nil {
			return err
		}
		e.sessionTools[ent.spec.Name] = ent
	}
	return nil
}

// sessionOf is the account and session of a call; a call without an
// account is the executor's (the local account), as in the journal.
func (e *Executor) sessionOf(inv *Invocation) (account, id string, err error) {
	account = inv.Caller.AccountID
	if account == "" {
		account = e.opts.AccountID
	}
	if inv.Caller.SessionID == "" {
		return "", "", Errorf(CodeSessionRequired, "%s works on the caller's session and this call named none; call it inside a session (MCP session, X-Session-Id or metadata.session_id)", inv.Spec.Name)
	}
	return account, inv.Caller.SessionID, nil
}

var variableName = json.RawMessage(`{"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$", "description": "variable name: 1–64 of A-Z a-z 0-9 _ . : -"}`)

// variableNameZH is the Chinese of variableName's description.
const variableNameZH = "变量名：1–64 个 A-Z a-z 0-9 _ . : - 字符"

type characterTool struct{ e *Executor }

func (*characterTool) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "get_character_info", Version: "1.0.0",
		Title: catalog.Text{ZH: "角色信息", EN: "Character info"},
		Description: catalog.Text{
			ZH: "返回当前会话所扮演角色的 id、名字、描述和属性；会话没有角色时返回错误。",
			EN: "Returns the id, name, description and attributes of the character the current session plays; an error when the session has none.",
		},
		Input:       json.RawMessage(`{"type": "object", "properties": {}, "additionalProperties": false}`),
		Annotations: catalog.Annotations{ReadOnly: true, Idempotent: true},
		SideEffect:  catalog.SideEffectNone, ReplaySafe: true,
	}
}

func (t *characterTool) Call(ctx context.Context, inv *Invocation) (*Result, error) {
	account, sid, err := t.e.sessionOf(inv)
	if err != nil {
		return nil, err
	}
	s, err := t.e.opts.Sessions.GetSession(ctx, account, sid)
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", sid, err)
	}
	if s.Character == nil {
		return nil, Errorf(CodeNoCharacter, "this session has no character; give it one with PATCH /sessions/%s {\"character\": {...}}", sid)
	}
	c := s.Character
	return &Result{Structured: c, Text: fmt.Sprintf("%s: %s", c.Name, c.Description), Summary: "character " + c.Name}, nil
}

type getVariable struct{ e *Executor }

func (*getVariable) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "get_variable", Version: "1.0.0",
		Title: catalog.Text{ZH: "读取会话变量", EN: "Get a session variable"},
		Description: catalog.Text{
			ZH: "读取当前会话中名为 name 的变量；不存在时 found 为 false、value 为 null。",
			EN: "Reads the variable name of the current session; found is false and value null when it is not set.",
		},
		Input:       json.RawMessage(`{"type": "object", "properties": {"name": ` + string(variableName) + `}, "required": ["name"], "additionalProperties": false}`),
		InputZH:     catalog.SchemaZH{"/properties/name": variableNameZH},
		Annotations: catalog.Annotations{ReadOnly: true, Idempotent: true},
		SideEffect:  catalog.SideEffectNone, ReplaySafe: true,
	}
}

func (t *getVariable) Call(ctx context.Context, inv *Invocation) (*Result, error) {
	account, sid, err := t.e.sessionOf(inv)
	if err != nil {
		return nil, err
	}
	var in struct {
		Name string `json:"name"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	v, err := t.e.opts.Variables.GetVariable(ctx, account, sid, in.Name)
	if errors.Is(err, session.ErrNoVariable) {
		return &Result{Structured: variableResult{Name: in.Name},
			Text: in.Name + " is not set", Summary: "variable " + in.Name + " not set"}, nil
	}
	if err != nil {
		return nil, err
	}
	at := v.UpdatedAt.UnixMilli()
	return &Result{Structured: variableResult{Found: true, Name: in.Name, UpdatedAt: &at, Value: v.Value},
		Text: in.Name + " = " + string(v.Value), Summary: "variable " + in.Name}, nil
}

// variableResult is get_variable's output: value null and no updated_at
// when the variable is not set.
type variableResult struct {
	Found     bool            `json:"found"`
	Name      string          `json:"name"`
	UpdatedAt *int64          `json:"updated_at,omitempty"`
	Value     json.RawMessage `json:"value"`
}

type setVariable struct{ e *Executor }

// variableSet is set_variable's output.
type variableSet struct {
	Bytes     int    `json:"bytes"`
	Name      string `json:"name"`
	UpdatedAt int64  `json:"updated_at"`
}

func (*setVariable) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "set_variable", Version: "1.0.0",
		Title: catalog.Text{ZH: "设置会话变量", EN: "Set a session variable"},
		Description: catalog.Text{
			ZH: fmt.Sprintf("把当前会话中名为 name 的变量设为任意 JSON 值 value（至多 %d 字节；每个会话至多 %d 个变量）。", session.MaxVariableBytes, session.MaxVariablesPerSession),
			EN: fmt.Sprintf("Sets the variable name of the current session to any JSON value (at most %d bytes; at most %d variables per session).", session.MaxVariableBytes, session.MaxVariablesPerSession),
		},
		Input:       json.RawMessage(`{"type": "object", "properties": {"name": ` + string(variableName) + `, "value": {"anyOf": [{"type": "object"}, {"type": "array"}, {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}], "description": "any JSON value"}}, "required": ["name", "value"], "additionalProperties": false}`),
		InputZH:     catalog.SchemaZH{"/properties/name": variableNameZH, "/properties/value": "任意 JSON 值"},
		Annotations: catalog.Annotations{Idempotent: true},
		SideEffect:  catalog.SideEffectSandbox,
	}
}

func (t *setVariable) Call(ctx context.Context, inv *Invocation) (*Result, error) {
	account, sid, err := t.e.sessionOf(inv)
	if err != nil {
		return nil, err
	}
	var in struct {
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	if len(in.Value) > session.MaxVariableBytes {
		return nil, Errorf(CodeVariableLimit, "the value of %s is %d bytes as JSON; at most %d are allowed", in.Name, len(in.Value), session.MaxVariableBytes)
	}
	now := inv.Ref.Clock
	err = t.e.opts.Variables.SetVariable(ctx, account, sid, session.Variable{Name: in.Name, Value: in.Value, UpdatedAt: now})
	if errors.Is(err, session.ErrTooManyVariables) {
		return nil, Errorf(CodeVariableLimit, "this session already has %d variables, the most allowed; reuse a name", session.MaxVariablesPerSession)
	}
	if err != nil {
		return nil, err
	}
	return &Result{Structured: variableSet{Bytes: len(in.Value), Name: in.Name, UpdatedAt: now.UnixMilli()},
		Text: in.Name + " set", Summary: "set " + in.Name}, nil
}
