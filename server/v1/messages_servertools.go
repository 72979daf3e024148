package v1

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools/approval"
)

// The Messages server tools Anthropic runs on its own servers (web_search,
// web_fetch, code_execution, each in its dated versions). On a route whose
// upstream is Anthropic's API they pass through untouched: the declaration
// is forwarded and the upstream's server_tool_use and *_tool_result blocks
// come back as they came. On any other route toolhost's hosted tools serve
// them — web_search by web_search, web_fetch by fetch_page, code_execution
// by run_code — through the loop like any hosted call (metered, limited,
// journaled), and the calls are answered as the API answers them:
// server_tool_use then the tool's result block (messages_serverblocks.go),
// the final text citing the search results it links to.

// serverToolKind is what a server tool is, and the hosted tool serving it.
type serverToolKind struct {
	name   string // the server tool's name (server_tool_use.name)
	hosted string // the hosted tool that serves it
	// filters says the declaration may carry allowed_domains and
	// blocked_domains.
	filters bool
}

var serverToolKinds = []serverToolKind{
	{name: "web_search", hosted: searchToolName, filters: true},
	{name: "web_fetch", hosted: openToolName, filters: true},
	{name: "code_execution", hosted: "run_code"},
}

// serverToolKindOf is the kind of a Messages tool type (web_search_20250305
// and every other dated version), false for other types.
func serverToolKindOf(typ string) (serverToolKind, bool) {
	for _, k := range serverToolKinds {
		if strings.HasPrefix(typ, k.name+"_20") {
			return k, true
		}
	}
	return serverToolKind{}, false
}

// serverTool is a declared server tool that hosted tools serve.
type serverTool struct {
	serverToolKind
	// version is the declared type (web_search_20250305, ...).
	version string
}

// bash says the code execution tool is the version whose calls the API
// answers as bash_code_execution (20250825 and later); 20250522 answers
// code_execution with Python.
func (t serverTool) bash() bool {
	return t.name == "code_execution" && t.version >= "code_execution_20250825"
}

// useName is the server_tool_use name of a call of the tool.
func (t serverTool) useName() string {
	if t.bash() {
		return "bash_code_execution"
	}
	return t.name
}

// serverTools are the server tools a request declared that hosted tools
// serve, by hosted tool name; nil when none (or when they pass through).
type serverTools map[string]serverTool

// serves is the server tool a hosted call serves.
func (s serverTools) serves(hosted string) (serverTool, bool) {
	t, ok := s[hosted]
	return t, ok
}

// serverToolDecl is a server tool item of tools, kept until the route is
// known.
type serverToolDecl struct {
	kind  serverToolKind
	typ   string
	item  json.RawMessage
	param string
}

// serverToolFields are the members of a server tool declaration toolhost
// reads; the others (cache_control, defer_loading, strict, citations,
// max_content_tokens, allowed_callers) are accepted and not used.
type serverToolFields struct {
	AllowedDomains []string        `json:"allowed_domains"`
	BlockedDomains []string        `json:"blocked_domains"`
	MaxUses        *int            `json:"max_uses"`
	Name           string          `json:"name"`
	UserLocation   json.RawMessage `json:"user_location"`
}

// maxDomains is the most domains a filter may list (the hosted tools' own
// limit).
const maxDomains = 20

// nativeServerTools says whether the request's route runs server tools
// itself (its upstream is Anthropic's API): then they pass through.
func (h *Handler) nativeServerTools(model string) bool {
	route, err := h.opts.Router.Pick(model, true)
	return err == nil && route.Protocol == loop.DialectAnthropic
}

// passServerTools forwards the declarations as they came.
func (mr *messagesRequest) passServerTools(decls []serverToolDecl) {
	for _, d := range decls {
		var f serverToolFields
		_ = json.Unmarshal(d.item, &f) // an object: checked when read
		mr.loop.Tools = append(mr.loop.Tools, loop.Function{Name: f.Name, Dialect: loop.DialectAnthropic, Raw: d.item})
	}
}

// serveServerTools makes hosted tools serve the declared server tools:
// each enabled (never asking for approval), its domain filters fixed
// arguments of every call, its max_uses a bound on its calls.
func (mr *messagesRequest) serveServerTools(decls []serverToolDecl, enabled map[string]bool) error {
	pub := mr.h.published()
	mr.builtins = serverTools{}
	for _, d := range decls {
		var f serverToolFields
		if err := json.Unmarshal(d.item, &f); err != nil {
			return badRequest(ReasonInvalidRequest, d.param, "a "+d.typ+" tool: "+err.Error())
		}
		if f.Name != "" && f.Name != d.kind.name {
			return badRequest(ReasonInvalidRequest, d.param+".name", fmt.Sprintf("the %s tool is named %q", d.typ, d.kind.name))
		}
		if _, dup := mr.builtins[d.kind.hosted]; dup {
			return badRequest(ReasonInvalidRequest, d.param, fmt.Sprintf("declare one %s tool", d.kind.name))
		}
		if _, ok := pub.Lookup(d.kind.hosted); !ok {
			return badRequest(ReasonToolTypeUnsupported, d.param+".type", fmt.Sprintf("the %s tool is served here by the hosted %s tool, which this server does not publish", d.typ, d.kind.hosted))
		}
		if err := mr.serverToolBounds(d, f); err != nil {
			return err
		}
		mr.builtins[d.kind.hosted] = serverTool{serverToolKind: d.kind, version: d.typ}
		if !enabled[d.kind.hosted] {
			enabled[d.kind.hosted] = true
			addPolicy(&mr.hosted.Approval, declPolicy{tools: map[string]approval.Policy{d.kind.hosted: approval.Never}}, []string{d.kind.hosted})
		}
	}
	mr.declared = true
	return nil
}

// serverToolBounds reads a declaration's max_uses and domain filters into
// the run's bounds and fixed arguments.
func (mr *messagesRequest) serverToolBounds(d serverToolDecl, f serverToolFields) error {
	if f.MaxUses != nil {
		if *f.MaxUses < 1 {
			return badRequest(ReasonInvalidRequest, d.param+".max_uses", "max_uses must be at least 1")
		}
		if mr.hosted.MaxUses == nil {
			mr.hosted.MaxUses = map[string]int{}
		}
		mr.hosted.MaxUses[d.kind.hosted] = *f.MaxUses
	}
	if !d.kind.filters {
		return nil
	}
	if len(f.AllowedDomains) > 0 && len(f.BlockedDomains) > 0 {
		return badRequest(ReasonInvalidRequest, d.param, "allowed_domains and blocked_domains cannot both be set")
	}
	if len(f.AllowedDomains) > maxDomains || len(f.BlockedDomains) > maxDomains {
		return badRequest(ReasonInvalidRequest, d.param, fmt.Sprintf("at most %d domains in allowed_domains or blocked_domains", maxDomains))
	}
	fixed := map[string]json.RawMessage{}
	for key, list := range map[string][]string{"allowed_domains": f.AllowedDomains, "blocked_domains": f.BlockedDomains} {
		if len(list) > 0 {
			fixed[key], _ = json.Marshal(list)
		}
	}
	if len(fixed) == 0 {
		return nil
	}
	if mr.hosted.Fixed == nil {
		mr.hosted.Fixed = map[string]map[string]json.RawMessage{}
	}
	mr.hosted.Fixed[d.kind.hosted] = fixed
	return nil
}

// choice is a tool_choice naming a served server tool ({"type":"tool",
// "name":"web_fetch"}) as the choice of the hosted tool serving it.
func (s serverTools) choice(c loop.ToolChoice) loop.ToolChoice {
	if c.Mode != loop.ToolChoiceFunction {
		return c
	}
	for hosted, t := range s {
		if t.name == c.Name {
			return loop.ToolChoice{Mode: loop.ToolChoiceFunction, Name: hosted}
		}
	}
	return c
}
