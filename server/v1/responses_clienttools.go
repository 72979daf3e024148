package v1

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/server/v1/loop"
)

// The Responses tool types the caller runs itself, with an item type of
// their own (apply_patch, shell, local_shell): the model gets a function of
// the tool's name whose arguments are the item's operation or action; its
// calls come back as apply_patch_call / shell_call / local_shell_call
// items, and those items and their outputs sent back become the function's
// calls and results.
type clientTool struct {
	description string
	schema      string
}

var clientTools = map[string]clientTool{
	"apply_patch": {
		description: "Creates, updates or deletes one file. update_file and create_file take a V4A diff (create_file: the whole file as added lines); delete_file takes none.",
		schema:      `{"additionalProperties":false,"properties":{"diff":{"description":"the V4A diff","type":"string"},"path":{"description":"the file's path","type":"string"},"type":{"enum":["create_file","update_file","delete_file"],"type":"string"}},"required":["type","path"],"type":"object"}`,
	},
	"local_shell": {
		description: "Runs one command on the user's machine (command is its argv, not a shell line) and returns its output.",
		schema:      `{"properties":{"command":{"items":{"type":"string"},"type":"array"},"env":{"additionalProperties":{"type":"string"},"type":"object"},"timeout_ms":{"type":"integer"},"user":{"type":"string"},"working_directory":{"type":"string"}},"required":["command"],"type":"object"}`,
	},
	"shell": {
		description: "Runs shell commands, one after the other, and returns their output.",
		schema:      `{"additionalProperties":false,"properties":{"commands":{"items":{"type":"string"},"type":"array"},"max_output_length":{"type":"integer"},"timeout_ms":{"type":"integer"}},"required":["commands"],"type":"object"}`,
	},
}

// clientToolFunction is a client-run tool type as a function.
func clientToolFunction(typ, param string) (loop.Function, callerTool, error) {
	ct := clientTools[typ]
	fn, err := chatTool(typ, ct.description, json.RawMessage(ct.schema), nil, param)
	return fn, callerTool{Name: typ, Kind: typ}, err
}

// Output items of the client-run tools.
type (
	applyPatchCallItem struct {
		CallID    string         `json:"call_id"`
		ID        string         `json:"id"`
		Operation patchOperation `json:"operation"`
		Status    string         `json:"status"`
		Type      string         `json:"type"`
	}
	patchOperation struct {
		Diff *string `json:"diff,omitempty"`
		Path string  `json:"path"`
		Type string  `json:"type"`
	}
	shellCallItem struct {
		Action      shellAction     `json:"action"`
		CallID      string          `json:"call_id"`
		Environment json.RawMessage `json:"environment"`
		ID          string          `json:"id"`
		Status      string          `json:"status"`
		Type        string          `json:"type"`
	}
	localShellCallItem struct {
		Action localShellAction `json:"action"`
		CallID string           `json:"call_id"`
		ID     string           `json:"id"`
		Status string           `json:"status"`
		Type   string           `json:"type"`
	}
	localShellAction struct {
		Command          []string          `json:"command"`
		Env              map[string]string `json:"env"`
		TimeoutMs        json.RawMessage   `json:"timeout_ms"`
		Type             string            `json:"type"`
		User             json.RawMessage   `json:"user"`
		WorkingDirectory json.RawMessage   `json:"working_directory"`
	}
	shellAction struct {
		Commands        []string        `json:"commands"`
		MaxOutputLength json.RawMessage `json:"max_output_length"`
		TimeoutMs       json.RawMessage `json:"timeout_ms"`
	}
)

// clientToolItem renders a call of a client-run tool; arguments the model
// wrote wrong give an item with what could be read.
func clientToolItem(kind, callID, args, status string) any {
	switch kind {
	case "apply_patch":
		var op patchOperation
		_ = json.Unmarshal([]byte(args), &op)
		return applyPatchCallItem{ID: itemID(callerTool{Kind: kind}, callID), Type: "apply_patch_call", CallID: callID, Operation: op, Status: status}
	case "local_shell":
		var a localShellAction
		_ = json.Unmarshal([]byte(args), &a)
		a.Type = "exec"
		if a.Command == nil {
			a.Command = []string{}
		}
		if a.Env == nil {
			a.Env = map[string]string{}
		}
		for _, raw := range []*json.RawMessage{&a.TimeoutMs, &a.User, &a.WorkingDirectory} {
			if !present(*raw) {
				*raw = json.RawMessage("null")
			}
		}
		return localShellCallItem{ID: itemID(callerTool{Kind: kind}, callID), Type: "local_shell_call", CallID: callID, Action: a, Status: status}
	default: // shell
		var a shellAction
		_ = json.Unmarshal([]byte(args), &a)
		if a.Commands == nil {
			a.Commands = []string{}
		}
		for _, raw := range []*json.RawMessage{&a.MaxOutputLength, &a.TimeoutMs} {
			if !present(*raw) {
				*raw = json.RawMessage("null")
			}
		}
		return shellCallItem{ID: itemID(callerTool{Kind: kind}, callID), Type: "shell_call", CallID: callID, Action: a, Environment: json.RawMessage("null"), Status: status}
	}
}

// itemID is the id of the output item of a call of the caller's tool t.
func itemID(t callerTool, callID string) string {
	switch {
	case t.Kind == "apply_patch":
		return "apc_" + callID
	case t.Kind == "shell":
		return "sh_" + callID
	case t.Kind == "local_shell":
		return "lsh_" + callID
	case t.Custom:
		return "ctc_" + callID
	}
	return "fc_" + callID
}

// clientToolInput reads the input items of the client-run tools: a call
// becomes the function's call, an output its result. It says whether the
// item was one of them.
func clientToolInput(b *inputBuilder, typ string, item json.RawMessage, param string) (bool, error) {
	var it struct {
		CallID    string          `json:"call_id"`
		ID        string          `json:"id"`
		Operation json.RawMessage `json:"operation"`
		Action    json.RawMessage `json:"action"`
		Output    json.RawMessage `json:"output"`
		Status    string          `json:"status"`
	}
	switch typ {
	case "apply_patch_call", "shell_call", "apply_patch_call_output", "shell_call_output", "local_shell_call":
	case "code_interpreter_call":
		// Not a client-run tool, but an item of a tool with a type of its
		// own all the same (responses_codeinterpreter.go).
		return true, continuedCodeCall(b, item, param)
	case "local_shell_call_output":
		// Its id is the call's (local_shell_call's call_id, or its item
		// id); a call_id member is read as well.
		if err := json.Unmarshal(item, &it); err != nil || it.ID == "" && it.CallID == "" {
			return true, badRequest(ReasonInvalidRequest, param, "a local_shell_call_output item needs the call's id")
		}
		callID := it.CallID
		if callID == "" {
			callID = strings.TrimPrefix(it.ID, "lsh_")
		}
		var out string
		if err := json.Unmarshal(it.Output, &out); err != nil {
			return true, badRequest(ReasonInvalidRequest, param+".output", "output must be a string")
		}
		b.results = append(b.results, loop.Message{Role: loop.RoleTool, ToolCallID: callID, Text: out})
		return true, nil
	default:
		return false, nil
	}
	if err := json.Unmarshal(item, &it); err != nil || it.CallID == "" {
		return true, badRequest(ReasonInvalidRequest, param, fmt.Sprintf("a %s item needs call_id", typ))
	}
	switch typ {
	case "apply_patch_call":
		b.callerCall(loop.ToolCall{ID: it.CallID, Name: "apply_patch", Args: it.Operation})
	case "shell_call":
		b.callerCall(loop.ToolCall{ID: it.CallID, Name: "shell", Args: it.Action})
	case "local_shell_call":
		b.callerCall(loop.ToolCall{ID: it.CallID, Name: "local_shell", Args: it.Action})
	case "apply_patch_call_output":
		text, err := outputText(it.Output)
		if err != nil {
			return true, badRequest(ReasonInvalidRequest, param+".output", err.Error())
		}
		if text == "" {
			text = it.Status
		}
		b.results = append(b.results, loop.Message{Role: loop.RoleTool, ToolCallID: it.CallID, Text: text, IsError: it.Status == "failed"})
	case "shell_call_output":
		// The model reads the outputs (stdout, stderr, outcome) as sent.
		b.results = append(b.results, loop.Message{Role: loop.RoleTool, ToolCallID: it.CallID, Text: string(it.Output)})
	}
	return true, nil
}
