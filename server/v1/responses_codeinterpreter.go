package v1

import (
	"encoding/json"
	"strings"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools/approval"
)

// The Responses code_interpreter tool is served by the hosted run_code: the
// loop runs it like any hosted call (metered, limited, journaled) and its
// calls come back as code_interpreter_call items whose outputs are the
// program's logs (stdout, then stderr). Each call runs in a fresh sandbox:
// container_id names the call, not a container that lives on.

// codeToolName is the hosted tool that serves code_interpreter.
const codeToolName = "run_code"

// codeInterpreterTool reads a code_interpreter tool; its container (auto
// or an id) is accepted and not used.
func (rr *responsesRequest) codeInterpreterTool(item json.RawMessage, param string) error {
	var ci struct {
		Container json.RawMessage `json:"container"`
	}
	if err := json.Unmarshal(item, &ci); err != nil {
		return badRequest(ReasonInvalidRequest, param, "a code_interpreter tool must be an object: "+err.Error())
	}
	if rr.interpreter {
		return badRequest(ReasonInvalidRequest, param, "declare one code_interpreter tool")
	}
	if _, ok := rr.h.published().Lookup(codeToolName); !ok {
		return badRequest(ReasonToolTypeUnsupported, param+".type", "code_interpreter is served here by the hosted run_code tool, which this server does not publish (no sandbox runtimes)")
	}
	rr.interpreter = true
	return nil
}

// enableInterpreter adds run_code to the enabled hosted tools for a
// declared code_interpreter, never asking for approval (the official tool
// does not); enabled only for it, it is not listed in mcp_list_tools.
func (rr *responsesRequest) enableInterpreter(enabled map[string]bool) {
	if !rr.interpreter {
		return
	}
	if !enabled[codeToolName] {
		rr.codeOnly = true
		enabled[codeToolName] = true
		addPolicy(&rr.hosted.Approval, declPolicy{tools: map[string]approval.Policy{codeToolName: approval.Never}}, []string{codeToolName})
	}
	rr.declared = true
}

// servesCode says whether a hosted call serves code_interpreter.
func (rr *responsesRequest) servesCode(name string) bool {
	return rr.interpreter && name == codeToolName
}

// codeInterpreterCallItem is a code_interpreter_call output item.
type (
	codeInterpreterCallItem struct {
		Code        *string     `json:"code"`
		ContainerID string      `json:"container_id"`
		ID          string      `json:"id"`
		Outputs     *[]codeLogs `json:"outputs"`
		Status      string      `json:"status"`
		Type        string      `json:"type"`
	}
	codeLogs struct {
		Logs string `json:"logs"`
		Type string `json:"type"`
	}
)

// codeArgs are run_code's arguments a code_interpreter_call shows.
type codeArgs struct {
	Code     string `json:"code"`
	Language string `json:"language,omitempty"`
}

// newCodeInterpreterItem renders a hosted run_code call; done says whether
// it has finished (outputs then hold its logs, or the error).
func newCodeInterpreterItem(c loop.Call, done bool) codeInterpreterCallItem {
	var args codeArgs
	_ = json.Unmarshal(c.Args, &args) // a model's bad arguments: no code
	it := codeInterpreterCallItem{ID: "ci_" + c.ID, Type: "code_interpreter_call", ContainerID: "cntr_" + c.ID, Code: &args.Code, Status: "in_progress"}
	if !done {
		return it
	}
	it.Status = "completed"
	var out struct {
		Stdout string `json:"stdout"`
		Stderr string `json:"stderr"`
	}
	logs := c.Result
	if c.IsError || c.Status == loop.StatusFailed {
		it.Status = "failed"
	} else if json.Unmarshal(c.Structured, &out) == nil {
		logs = out.Stdout
		if out.Stderr != "" {
			if logs != "" && !strings.HasSuffix(logs, "\n") {
				logs += "\n"
			}
			logs += out.Stderr
		}
	}
	it.Outputs = &[]codeLogs{{Type: "logs", Logs: logs}}
	return it
}

// continuedCodeCall is a code_interpreter_call item sent back as input: the
// run_code call the model made and its logs as the result.
func continuedCodeCall(b *inputBuilder, item json.RawMessage, param string) error {
	var it codeInterpreterCallItem
	if err := json.Unmarshal(item, &it); err != nil {
		return badRequest(ReasonInvalidRequest, param, "code_interpreter_call: "+err.Error())
	}
	code := ""
	if it.Code != nil {
		code = *it.Code
	}
	args, err := marshal(codeArgs{Code: code, Language: "python"})
	if err != nil {
		return err
	}
	var logs []string
	if it.Outputs != nil {
		for _, o := range *it.Outputs {
			logs = append(logs, o.Logs)
		}
	}
	id := strings.TrimPrefix(it.ID, "ci_")
	b.hostedCall(loop.ToolCall{ID: id, Name: codeToolName, Args: args}, loop.Message{Role: loop.RoleTool, ToolCallID: id, Text: strings.Join(logs, "\n"), IsError: it.Status == "failed"})
	return nil
}

// codeInterpreterCall sends a finished hosted call serving code_interpreter
// as a code_interpreter_call item: added, in_progress, the code (delta,
// done), interpreting, completed, done.
func (s *responsesStream) codeInterpreterCall(i int, c loop.Call) error {
	added := at(i, "")
	item := newCodeInterpreterItem(c, false)
	added.Item = item
	if err := s.send("response.output_item.added", added); err != nil {
		return err
	}
	if err := s.send("response.code_interpreter_call.in_progress", at(i, item.ID)); err != nil {
		return err
	}
	d := at(i, item.ID)
	d.Delta = item.Code
	if err := s.send("response.code_interpreter_call_code.delta", d); err != nil {
		return err
	}
	d = at(i, item.ID)
	d.Code = *item.Code
	if err := s.send("response.code_interpreter_call_code.done", d); err != nil {
		return err
	}
	for _, typ := range []string{"interpreting", "completed"} {
		if err := s.send("response.code_interpreter_call."+typ, at(i, item.ID)); err != nil {
			return err
		}
	}
	return s.itemDone(i, newCodeInterpreterItem(c, true))
}
