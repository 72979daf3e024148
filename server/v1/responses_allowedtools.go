package v1

import (
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/server/v1/loop"
)

// The allowed_tools form of a Responses tool_choice
// ({"type":"allowed_tools","mode":"auto"|"required","tools":[...]}) is
// honoured here rather than sent on, since neither upstream protocol has
// it everywhere: the model is given only the listed tools (the caller's
// and the hosted ones), and mode is the choice among them.

// isAllowedTools says whether a tool_choice is the allowed_tools form.
func isAllowedTools(raw json.RawMessage) bool {
	var c struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(raw, &c) == nil && c.Type == "allowed_tools"
}

// allowedRef is one tool an allowed_tools choice lists.
type allowedRef struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	ServerLabel string `json:"server_label"`
	Type        string `json:"type"`
}

// allowedTools reads an allowed_tools choice and keeps in the request only
// the tools it lists; a listed tool the request does not declare is
// refused.
func (rr *responsesRequest) allowedTools(raw json.RawMessage) (loop.ToolChoice, error) {
	var c struct {
		Mode  string       `json:"mode"`
		Tools []allowedRef `json:"tools"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice", "allowed_tools: "+err.Error())
	}
	choice := loop.ToolChoice{Mode: loop.ToolChoiceAuto}
	switch c.Mode {
	case "auto":
	case "required":
		choice.Mode = loop.ToolChoiceRequired
	default:
		return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice.mode", `allowed_tools mode must be "auto" or "required"`)
	}
	if len(c.Tools) == 0 {
		return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice.tools", "allowed_tools lists no tool")
	}
	keep := map[string]bool{}
	for i, t := range c.Tools {
		names, err := rr.allowedNames(t)
		if err != nil {
			return loop.ToolChoice{}, badRequest(ReasonToolChoiceNotEnabled, fmt.Sprintf("tool_choice.tools[%d]", i), err.Error())
		}
		for _, n := range names {
			keep[n] = true
		}
	}
	var fns []loop.Function
	for _, f := range rr.loop.Tools {
		if keep[f.Name] {
			fns = append(fns, f)
		}
	}
	rr.loop.Tools = fns
	var hosted []string
	for _, n := range rr.hosted.Tools {
		if keep[n] {
			hosted = append(hosted, n)
		}
	}
	rr.hosted.Tools = hosted
	return choice, nil
}

// allowedNames are the function names (the upstream's, or hosted tools')
// an allowed_tools entry stands for.
func (rr *responsesRequest) allowedNames(t allowedRef) ([]string, error) {
	var names []string
	switch {
	case t.Type == "mcp":
		if t.ServerLabel != rr.h.opts.Label {
			return nil, fmt.Errorf("no mcp tools of server %q are declared; the hosted tools are %q", t.ServerLabel, rr.h.opts.Label)
		}
		for _, n := range rr.hosted.Tools {
			if t.Name == "" || n == t.Name {
				names = append(names, n)
			}
		}
	case isWebSearchTool(t.Type) && rr.search != nil:
		names = rr.search.hosted
	case t.Type == "code_interpreter" && rr.interpreter:
		names = []string{codeToolName}
	case t.Type == "function" || t.Type == "custom":
		names = []string{upstreamName(t.Namespace, t.Name)}
	case clientTools[t.Type].schema != "":
		names = []string{t.Type}
	}
	for _, n := range names {
		if rr.declares(n) {
			return names, nil
		}
	}
	what := t.Type
	if t.Name != "" {
		what += " " + t.Name
	}
	return nil, fmt.Errorf("allowed_tools lists %s, which the request's tools do not declare", what)
}

// declares says whether the request gives the model a function of name.
func (rr *responsesRequest) declares(name string) bool {
	for _, f := range rr.loop.Tools {
		if f.Name == name {
			return true
		}
	}
	for _, n := range rr.hosted.Tools {
		if n == name {
			return true
		}
	}
	return false
}
