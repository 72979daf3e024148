package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/toolhost/toolhost/server/v1/loop"
)

// The Responses tool types other than function and mcp, as the upstream
// (Chat Completions, or Messages through the loop's translation) sees them:
//
//   - namespace: each function (or custom tool) inside becomes a function
//     named NAMESPACE__NAME; the model's calls come back as function_call
//     (custom_tool_call) items carrying name and namespace apart;
//   - custom: a function with one string parameter "input" (the format's
//     grammar, if any, told in its description); its calls come back as
//     custom_tool_call items whose input is that string;
//   - apply_patch and shell: functions of those names whose calls come back
//     as apply_patch_call and shell_call items (responses_clienttools.go);
//   - tool_search: nothing to send, since deferred tools go to the model
//     with the others;
//   - the built-in tools OpenAI runs on its own servers are refused with
//     the reason (builtinRefusals), except the web search ones, which
//     toolhost's hosted web_search serves (responses_websearch.go), and
//     code_interpreter, which run_code serves
//     (responses_codeinterpreter.go).
//
// callerTool is what a function the upstream knows stands for.
type callerTool struct {
	Namespace string
	Name      string
	Custom    bool
	// Kind is the client-run tool type (apply_patch, shell) the function
	// stands for, "" for a function or custom tool
	// (responses_clienttools.go).
	Kind string
}

// callerNames maps upstream function names to the caller's tools. Names the
// caller declared as plain functions are absent: they are their own.
type callerNames map[string]callerTool

// lookup is what an upstream function name stands for (itself when the
// caller declared it flat).
func (n callerNames) lookup(upstream string) callerTool {
	if t, ok := n[upstream]; ok {
		return t
	}
	return callerTool{Name: upstream}
}

// maxFunctionName is the longest function name Chat Completions accepts.
const maxFunctionName = 64

var (
	functionNameOK   = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	functionNameChar = regexp.MustCompile(`[^a-zA-Z0-9_-]`)
)

// upstreamName is the function name a namespaced tool has upstream: the
// namespace and name joined by "__"; a join that is too long or holds
// characters a function name cannot becomes a stem and a hash of the pair,
// still one name per pair.
func upstreamName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	joined := namespace + "__" + name
	if functionNameOK.MatchString(joined) {
		return joined
	}
	sum := sha256.Sum256([]byte(namespace + "\x00" + name))
	stem := functionNameChar.ReplaceAllString(joined, "_")
	const hashLen = 12
	if len(stem) > maxFunctionName-hashLen-1 {
		stem = stem[:maxFunctionName-hashLen-1]
	}
	return stem + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

// customInput is the arguments of a custom tool's function.
type customInput struct {
	Input string `json:"input"`
}

// customArgs is the input of a custom tool call as function arguments.
func customArgs(input string) json.RawMessage {
	raw, _ := marshal(customInput{Input: input})
	return raw
}

// customInputOf is the input string of a custom tool's function call: the
// "input" argument, or the arguments as sent when the model did not write
// that object.
func customInputOf(args string) string {
	var in customInput
	if json.Unmarshal([]byte(args), &in) == nil {
		return in.Input
	}
	return args
}

// The JSON schema of a custom tool's function; properties in the order a
// map gave (alphabetical), like the other schemas sent upstream.
type (
	customSchema struct {
		AdditionalProperties bool                      `json:"additionalProperties"`
		Properties           map[string]customProperty `json:"properties"`
		Required             []string                  `json:"required"`
		Type                 string                    `json:"type"`
	}
	customProperty struct {
		Description string `json:"description,omitempty"`
		Type        string `json:"type"`
	}
	customFormat struct {
		Definition string `json:"definition"`
		Syntax     string `json:"syntax"`
		Type       string `json:"type"`
	}
)

// customFunction is a custom tool as a function for the upstream.
func customFunction(item json.RawMessage, namespace, param string) (loop.Function, callerTool, error) {
	var ct struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Format      json.RawMessage `json:"format"`
	}
	if err := json.Unmarshal(item, &ct); err != nil || ct.Name == "" {
		return loop.Function{}, callerTool{}, badRequest(ReasonInvalidRequest, param+".name", "a custom tool needs a name")
	}
	input := customProperty{Type: "string", Description: "The tool's input, as plain text (not JSON)."}
	if present(ct.Format) {
		var f customFormat
		if err := json.Unmarshal(ct.Format, &f); err != nil {
			return loop.Function{}, callerTool{}, badRequest(ReasonInvalidRequest, param+".format", "format must be an object")
		}
		switch f.Type {
		case "text", "":
		case "grammar":
			// Chat Completions has no grammar-constrained decoding: the
			// model is told the grammar.
			input.Description = fmt.Sprintf("The tool's input, as plain text (not JSON). It must match this %s grammar:\n%s", f.Syntax, f.Definition)
		default:
			return loop.Function{}, callerTool{}, badRequest(ReasonInvalidRequest, param+".format.type", fmt.Sprintf("custom tool format %q is not one of text, grammar", f.Type))
		}
	}
	schema, err := marshal(customSchema{Type: "object", Properties: map[string]customProperty{"input": input}, Required: []string{"input"}})
	if err != nil {
		return loop.Function{}, callerTool{}, fmt.Errorf("%s: %w", param, err)
	}
	fn, err := chatTool(upstreamName(namespace, ct.Name), ct.Description, schema, nil, param)
	return fn, callerTool{Namespace: namespace, Name: ct.Name, Custom: true}, err
}

// chatTool is a function for the loop request, in the Chat Completions form.
func chatTool(name, description string, parameters, strict json.RawMessage, param string) (loop.Function, error) {
	fn := chatFunction{Name: name, Description: description}
	if present(parameters) {
		fn.Parameters = parameters
	}
	if present(strict) {
		fn.Strict = strict
	}
	raw, err := marshal(chatFunctionTool{Type: "function", Function: fn})
	if err != nil {
		return loop.Function{}, fmt.Errorf("%s: %w", param, err)
	}
	return loop.Function{Name: name, Description: description, Parameters: parameters, Dialect: loop.DialectOpenAI, Raw: raw}, nil
}

// functionHead is the members of a function tool the upstream needs.
type functionHead struct {
	Description string          `json:"description"`
	Name        string          `json:"name"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      json.RawMessage `json:"strict"`
	Type        string          `json:"type"`
}

// namespaceFunctions is a namespace tool's functions and custom tools as
// functions for the upstream, with what each name stands for.
func namespaceFunctions(item json.RawMessage, param string) ([]loop.Function, []callerTool, error) {
	var ns struct {
		Name  string            `json:"name"`
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(item, &ns); err != nil || ns.Name == "" {
		return nil, nil, badRequest(ReasonInvalidRequest, param+".name", "a namespace tool needs a name and a list of tools")
	}
	var (
		fns   []loop.Function
		names []callerTool
	)
	for j, sub := range ns.Tools {
		p := fmt.Sprintf("%s.tools[%d]", param, j)
		var head functionHead
		if err := json.Unmarshal(sub, &head); err != nil {
			return nil, nil, badRequest(ReasonInvalidRequest, p, "each tool must be an object")
		}
		switch head.Type {
		case "function":
			if head.Name == "" {
				return nil, nil, badRequest(ReasonInvalidRequest, p+".name", "a function tool needs a name")
			}
			fn, err := chatTool(upstreamName(ns.Name, head.Name), head.Description, head.Parameters, head.Strict, p)
			if err != nil {
				return nil, nil, err
			}
			fns, names = append(fns, fn), append(names, callerTool{Namespace: ns.Name, Name: head.Name})
		case "custom":
			fn, ct, err := customFunction(sub, ns.Name, p)
			if err != nil {
				return nil, nil, err
			}
			fns, names = append(fns, fn), append(names, ct)
		default:
			return nil, nil, badRequest(ReasonToolTypeUnsupported, p+".type", fmt.Sprintf("a namespace holds function and custom tools, not %q", head.Type))
		}
	}
	return fns, names, nil
}

// builtinRefusals are the Responses tool types OpenAI runs on its own
// servers that neither the upstream (Chat Completions or Messages) nor
// toolhost can stand in for, with why.
var builtinRefusals = map[string]string{
	"file_search":               "it searches OpenAI vector stores, which the upstream of this route does not have",
	"computer":                  "computer use needs a model trained for OpenAI's computer actions and a screen it drives",
	"computer_use_preview":      "computer use needs a model trained for OpenAI's computer actions and a screen it drives",
	"image_generation":          "it needs OpenAI's image model, which the upstream of this route does not have",
	"programmatic_tool_calling": "it runs model-written programs in OpenAI containers",
}

// addCallerTool adds a translated tool of the caller to the loop request,
// refusing two tools that would have one name upstream.
func (rr *responsesRequest) addCallerTool(fn loop.Function, ct callerTool, param string) error {
	for _, have := range rr.loop.Tools {
		if have.Name == fn.Name {
			return badRequest(ReasonInvalidRequest, param, fmt.Sprintf("two tools would be the function %q for the model: rename one", fn.Name))
		}
	}
	rr.loop.Tools = append(rr.loop.Tools, fn)
	if ct.Namespace != "" || ct.Custom || ct.Kind != "" {
		if rr.names == nil {
			rr.names = callerNames{}
		}
		rr.names[fn.Name] = ct
	}
	return nil
}
