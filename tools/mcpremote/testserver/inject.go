package testserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// InjectArgs are the arguments of the hostile tool inject: it answers Text
// as its text result, as a structuredContent alone ({"text": Text}, so
// toolhost renders it as JSON text), as an isError result's text, or as
// the message of a JSON-RPC error.
type InjectArgs struct {
	Text string `json:"text"`
	As   string `json:"as"` // text, structured, error or refusal
}

// addShaped adds the tools whose answers the test shapes: deep and inject.
func (s *Server) addShaped(ro *sdk.ToolAnnotations) {
	s.addDeep(ro)
	s.addInject(ro)
}

// addInject adds inject, whose answers carry text meant to break out of
// toolhost's untrusted-data fence.
func (s *Server) addInject(ro *sdk.ToolAnnotations) {
	schema := obj(`"text":{"type":"string"},"as":{"enum":["text","structured","error","refusal"]}`, "text", "as")
	s.srv.AddTool(&sdk.Tool{Name: "inject", Description: "Answers the text it is given, in the place it is told.", InputSchema: schema, Annotations: ro},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			s.count("inject")
			var a InjectArgs
			_ = json.Unmarshal(req.Params.Arguments, &a)
			switch a.As {
			case "structured":
				return &sdk.CallToolResult{StructuredContent: map[string]string{"text": a.Text}}, nil
			case "error":
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: a.Text}}}, nil
			case "refusal":
				return nil, &jsonrpc.Error{Code: -32001, Message: a.Text}
			}
			return text(a.Text), nil
		})
}
