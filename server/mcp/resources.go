package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
)

// The caller's own executions are MCP resources: the template
// toolhost://executions/{id} reads one journal record (the object GET
// /tool-executions/{id} answers under "data"), and resources/list lists the
// most recent ones. Every read is scoped to the caller's account: another
// account's id is "not found", exactly like an id that never existed.
const (
	// ExecutionURITemplate is the resource template of one execution.
	ExecutionURITemplate = "toolhost://executions/{id}"
	executionURIPrefix   = "toolhost://executions/"
	// RecentExecutions is how many executions resources/list lists, newest
	// first; older ones are read by id or through GET /tool-executions.
	RecentExecutions = 50
	// maxURIBytes bounds the URI of resources/read: longer ones are not
	// found without a lookup, and the error quotes them clipped.
	maxURIBytes = 256
)

var executionTemplateText = struct{ title, description catalog.Text }{
	title: catalog.Text{EN: "Tool execution", ZH: "工具执行记录"},
	description: catalog.Text{
		EN: "One of your tool calls as the journal recorded it (JSON): arguments, result, status, timings. {id} is the execution id that tools/call returns in _meta[\"toolhost/execution_id\"].",
		ZH: "执行日志记录的一次工具调用（JSON）：参数、结果、状态、耗时。{id} 是 tools/call 在 _meta[\"toolhost/execution_id\"] 中返回的执行 ID。",
	},
}

// addExecutions registers the execution templates on srv.
func (s *Server) addExecutions(srv *sdk.Server) {
	srv.AddResourceTemplate(executionTemplate(s.opts.Lang), s.readExecution)
	srv.AddResourceTemplate(resultTemplate(s.opts.Lang), s.readResult)
}

func executionTemplate(lang catalog.Lang) *sdk.ResourceTemplate {
	return &sdk.ResourceTemplate{
		URITemplate: ExecutionURITemplate,
		Name:        "execution",
		Title:       executionTemplateText.title.In(lang),
		Description: executionTemplateText.description.In(lang),
		MIMEType:    "application/json",
	}
}

// ExecutionURI is the resource URI of an execution.
func ExecutionURI(id string) string { return executionURIPrefix + id }

// executionID returns the execution id a resource URI names. Only the
// canonical form of a UUID is an id (what the Executor writes): a path
// segment such as "..", a query, percent-escapes, look-alike Unicode digits
// or an upper-case spelling name nothing.
func executionID(uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, executionURIPrefix)
	if !ok || len(id) != 36 {
		return "", false
	}
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return "", false
	}
	return id, true
}

// account is the account a request reads the journal of: the caller's
// own, as the Executor records it.
func (s *Server) account(ctx context.Context, extra *sdk.RequestExtra) string {
	return s.exec.Account(tools.Caller{Identity: s.identify(ctx, extra)})
}

func (s *Server) readExecution(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := executionID(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(clip.Echo(uri))
	}
	rec, err := s.exec.Journal().Store().Get(ctx, s.account(ctx, req.GetExtra()), id)
	if err != nil {
		return nil, s.journalError(ctx, uri, err)
	}
	body, err := json.Marshal(admin.Execution(rec))
	if err != nil {
		return nil, fmt.Errorf("encode execution %s: %w", id, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{
		URI: uri, MIMEType: "application/json", Text: string(body),
	}}}, nil
}

// journalError turns a failed journal read into the error the client sees:
// not found as the SDK's resource-not-found error, the rest as an internal
// error whose cause goes to the log only.
func (s *Server) journalError(ctx context.Context, uri string, err error) error {
	switch {
	case errors.Is(err, journal.ErrNotFound):
		return sdk.ResourceNotFoundError(uri)
	case errors.Is(err, journal.ErrUnavailable):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the journal's store does not answer; try again shortly"}
	}
	s.opts.Logger.ErrorContext(ctx, "reading the journal for an MCP resource failed", "uri", clip.Echo(uri), "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the journal could not be read; see the server log"}
}

// listExecutions answers resources/list with the caller's most recent
// executions. It hands out no cursor, so any cursor is invalid.
func (s *Server) listExecutions(ctx context.Context, req *sdk.ListResourcesRequest, lang catalog.Lang) (*sdk.ListResourcesResult, error) {
	if req.Params != nil && req.Params.Cursor != "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor: resources/list has a single page (the most recent executions)"}
	}
	recs, _, err := s.exec.Journal().Store().List(ctx, journal.Query{
		AccountID: s.account(ctx, req.GetExtra()), SortBy: journal.SortStartedAt, Limit: RecentExecutions,
	})
	if err != nil {
		return nil, s.journalError(ctx, executionURIPrefix, err)
	}
	out := &sdk.ListResourcesResult{Resources: make([]*sdk.Resource, 0, len(recs))}
	for _, rec := range recs {
		out.Resources = append(out.Resources, s.executionResource(rec, lang))
	}
	return out, nil
}

func (s *Server) executionResource(rec journal.Record, lang catalog.Lang) *sdk.Resource {
	title := rec.ToolName
	if spec, ok := s.exec.Catalog().Lookup(rec.ToolName); ok {
		title = spec.Title.In(lang)
	}
	r := &sdk.Resource{
		URI:         ExecutionURI(rec.ID),
		Name:        rec.ID,
		Title:       fmt.Sprintf("%s · %s · %s", title, rec.Status, rec.StartedAt.UTC().Format(time.RFC3339)),
		Description: rec.Summary,
		MIMEType:    "application/json",
	}
	if t := rec.FinishedAt; !t.IsZero() {
		r.Annotations = &sdk.Annotations{LastModified: t.UTC().Format(time.RFC3339)}
	}
	return r
}
