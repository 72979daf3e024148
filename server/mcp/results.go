package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/tools"
)

// The result of one of the caller's executions, in pages, is a resource
// too: toolhost://executions/{id}/result{?part,start_index,max_length}
// reads what the read_result builtin reads (tools.Executor.ReadResult:
// the whole copy of a cut result, else the record's), as the JSON object
// read_result returns as structured content. A cut result's note and its
// _meta["toolhost/continuation"] name the resource of the next page.

var resultTemplateText = struct{ title, description catalog.Text }{
	title: catalog.Text{EN: "Tool result, in pages", ZH: "工具结果（分段）"},
	description: catalog.Text{
		EN: "The whole result of one of your tool calls, a page at a time (JSON: content, start_index, returned_length, total_length, truncated, next_start_index). {id} is the execution id; part is text (default) or structured; start_index and max_length count characters (max_length default 50000, at most 200000). A cut result's note and _meta[\"toolhost/continuation\"] give the URI of the next page.",
		ZH: "你的一次工具调用的完整结果，分段读取（JSON：content、start_index、returned_length、total_length、truncated、next_start_index）。{id} 是执行 ID；part 为 text（默认）或 structured；start_index 和 max_length 以字符计（max_length 默认 50000，最多 200000）。被截断结果的说明和 _meta[\"toolhost/continuation\"] 给出下一段的 URI。",
	},
}

func resultTemplate(lang catalog.Lang) *sdk.ResourceTemplate {
	return &sdk.ResourceTemplate{
		URITemplate: tools.ResultURITemplate,
		Name:        "execution-result",
		Title:       resultTemplateText.title.In(lang),
		Description: resultTemplateText.description.In(lang),
		MIMEType:    "application/json",
	}
}

// maxPageLength is the largest max_length of a page, as read_result's.
const maxPageLength = 200000

// resultQuery reads a result resource URI: the execution id (canonical, as
// executionID), and the page's part, start_index and max_length, each at
// most once, in decimal digits. ok is false for a URI that names no
// result; err says what is wrong with a query that does.
func resultQuery(uri string) (in tools.ReadResultInput, ok bool, err error) {
	path, query, _ := strings.Cut(uri, "?")
	base, found := strings.CutSuffix(path, "/result")
	if !found {
		return in, false, nil
	}
	if in.ExecutionID, ok = executionID(base); !ok {
		return in, false, nil
	}
	q, perr := url.ParseQuery(query)
	if perr != nil {
		return in, true, fmt.Errorf("the query of %s cannot be read: %w", clip.Echo(uri), perr)
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return in, true, fmt.Errorf("%s is given %d times; give it once", clip.Echo(k), len(vs))
		}
		v := vs[0]
		switch k {
		case "part":
			in.Part = v
		case "start_index", "max_length":
			n, nerr := strconv.Atoi(v)
			if nerr != nil || strconv.Itoa(n) != v || n < 0 {
				return in, true, fmt.Errorf("%s must be a whole number of characters, not %q", k, clip.Echo(v))
			}
			if k == "start_index" {
				in.StartIndex = n
			} else if in.MaxLength = n; n < 1 || n > maxPageLength {
				return in, true, fmt.Errorf("max_length must be from 1 to %d", maxPageLength)
			}
		default:
			return in, true, fmt.Errorf("unknown query parameter %q: a result page takes part, start_index and max_length", clip.Echo(k))
		}
	}
	return in, true, nil
}

func (s *Server) readResult(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	in, ok, err := resultQuery(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(clip.Echo(uri))
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	page, err := s.exec.ReadResult(ctx, tools.Caller{Identity: s.identify(ctx, req.GetExtra())}, in)
	if err != nil {
		return nil, s.resultError(ctx, uri, err)
	}
	body, err := json.Marshal(page)
	if err != nil {
		return nil, fmt.Errorf("encode a page of execution %s: %w", in.ExecutionID, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{
		URI: uri, MIMEType: "application/json", Text: string(body),
	}}}, nil
}

// resultError is a failed page read as the client sees it: not found as
// the SDK's resource-not-found error, a bad page as invalid params, the
// rest as an internal error (the runtime's own cause logged only).
func (s *Server) resultError(ctx context.Context, uri string, err error) error {
	var te *tools.Error
	if !errors.As(err, &te) {
		s.opts.Logger.ErrorContext(ctx, "reading a result for an MCP resource failed", "uri", clip.Echo(uri), "err", err)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the journal could not be read; see the server log"}
	}
	switch te.Code {
	case tools.CodeNotFound:
		return sdk.ResourceNotFoundError(uri)
	case tools.CodeInvalidArgs:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: te.Message}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: te.Code + ": " + te.Message}
}
