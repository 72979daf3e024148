package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/tools"
)

// Face is the journal's face of a call made from the playground.
const Face = "console"

// Pipeline is what the playground runs calls through: the executor
// itself (*tools.Executor), so a playground call is authorized, limited,
// validated, approved and journaled like a call over MCP.
type Pipeline interface {
	// HostedCatalog is the tools a call in the account's session can run,
	// with the input schemas the pipeline validates against.
	HostedCatalog(ctx context.Context, account, sessionID string) (*tools.ToolSet, error)
	Execute(ctx context.Context, p tools.Proposal) (*tools.Outcome, error)
}

type playgroundData struct {
	Session, Slot, Tool string
	Slots               []string
	Tools               []tools.RuntimeTool // the session's runtime catalog
	Picked              *tools.RuntimeTool
	Description         string
	Schema              string
	Fields              []field
	RawArgs             string
	Result              *runResult
}

// runResult is one call's outcome as the page shows it: the text exactly
// as a model receives it and the structured result.
type runResult struct {
	ExecutionID, Status, Code, Message, Text, Structured, Arguments string
	IsError                                                         bool
	ApprovalID                                                      string
}

// playground shows the session's runtime catalog (GET
// /sessions/{id}/tools/runtime), and for the tool picked a form made from
// its input schema.
func (c *Console) playground(w http.ResponseWriter, r *http.Request, rq *request) {
	d := c.playgroundData(r)
	c.showPlayground(w, r, rq, d, http.StatusOK, view{})
}

func (c *Console) playgroundData(r *http.Request) *playgroundData {
	return &playgroundData{Session: strings.TrimSpace(r.FormValue("session")), Slot: r.FormValue("slot"),
		Tool: r.FormValue("tool"), Slots: c.slots(), RawArgs: r.PostFormValue("raw_args")}
}

func (c *Console) showPlayground(w http.ResponseWriter, r *http.Request, rq *request, d *playgroundData, status int, vw view) {
	vw.Title, vw.Nav, vw.Data = "Playground", "playground", d
	if c.o.Pipeline == nil {
		vw.Error = "the playground is not available on this server"
		c.render(w, http.StatusNotFound, "playground", rq, vw)
		return
	}
	if d.Session == "" {
		c.render(w, status, "playground", rq, vw)
		return
	}
	q := ""
	if d.Slot != "" {
		q = "?" + url.Values{"slot": {d.Slot}}.Encode()
	}
	var rt struct {
		Data runtimeCatalog `json:"data"`
	}
	st, msg := c.apiResult(c.apiCall(r.Context(), rq, http.MethodGet, "/sessions/"+url.PathEscape(d.Session)+"/tools/runtime"+q, nil, &rt))
	if msg != "" {
		vw.Error = strings.TrimSpace(vw.Error + " " + msg)
		c.render(w, st, "playground", rq, vw)
		return
	}
	d.Tools = rt.Data.Tools
	for i := range d.Tools {
		if d.Tools[i].Name == d.Tool && d.Picked == nil {
			d.Picked = &d.Tools[i]
		}
	}
	if d.Tool != "" && d.Fields == nil {
		if err := c.pickTool(r.Context(), rq, d); err != nil {
			c.o.Logger.Error("console: playground catalog", "err", err)
			vw.Error = strings.TrimSpace(vw.Error + " the tool's schema cannot be read right now")
			status = http.StatusServiceUnavailable
		}
	}
	c.render(w, status, "playground", rq, vw)
}

// pickTool reads the picked tool's input schema from the catalog a call
// in the session runs against, and makes its form fields.
func (c *Console) pickTool(ctx context.Context, rq *request, d *playgroundData) error {
	set, err := c.o.Pipeline.HostedCatalog(ctx, rq.AccountID, d.Session)
	if err != nil {
		return err
	}
	spec, ok := set.Lookup(d.Tool)
	if !ok {
		return nil // not callable here: the raw JSON field remains, and the pipeline says why
	}
	schema := spec.InputIn(catalog.English)
	d.Description, d.Schema, d.Fields = spec.Description.In(catalog.English), prettyJSON(schema), schemaFields(schema)
	if d.Fields == nil {
		d.Fields = []field{}
	}
	return nil
}

// runTool runs the picked tool with the form's arguments (or the raw
// JSON, when given) through the pipeline, as the signed-in key, on the
// console face: the key's scope and limits apply as on /mcp, and the call
// is journaled like any other.
func (c *Console) runTool(w http.ResponseWriter, r *http.Request, rq *request) {
	d := c.playgroundData(r)
	if c.o.Pipeline == nil || d.Session == "" || d.Tool == "" {
		c.showPlayground(w, r, rq, d, http.StatusBadRequest, view{Error: "pick a session and a tool first"})
		return
	}
	// The session must be the account's own (GET /sessions/{id}: another
	// account's is its 404), as the runtime catalog the form came from.
	if st, msg := c.apiResult(c.apiCall(r.Context(), rq, http.MethodGet, "/sessions/"+url.PathEscape(d.Session), nil, nil)); msg != "" {
		c.render(w, st, "playground", rq, view{Title: "Playground", Nav: "playground", Error: msg, Data: &playgroundData{Slots: c.slots()}})
		return
	}
	if err := c.pickTool(r.Context(), rq, d); err != nil {
		c.o.Logger.Error("console: playground catalog", "err", err)
		c.showPlayground(w, r, rq, d, http.StatusServiceUnavailable, view{Error: "the tool's schema cannot be read right now"})
		return
	}
	args, bad := formArguments(d.Fields, r.PostForm)
	if raw := strings.TrimSpace(d.RawArgs); raw != "" {
		if !json.Valid([]byte(raw)) {
			bad = append(bad, "arguments as JSON: not JSON")
		}
		args = json.RawMessage(raw)
	}
	if len(bad) > 0 {
		c.showPlayground(w, r, rq, d, http.StatusBadRequest, view{Error: "Not run: " + strings.Join(bad, "; ")})
		return
	}
	id := uuid.Must(uuid.NewV7()).String()
	out, err := c.o.Pipeline.Execute(r.Context(), tools.Proposal{Tool: d.Tool, Args: args, CallID: id, Lang: catalog.English,
		Caller: tools.Caller{Face: Face, SessionID: d.Session, FloorID: id, Slot: d.Slot,
			Identity: identity.Identity{AccountID: rq.AccountID, KeyID: rq.KeyID, Scopes: rq.Scopes}}})
	if err != nil {
		c.o.Logger.Error("console: playground run", "tool", d.Tool, "err", err)
		c.showPlayground(w, r, rq, d, http.StatusServiceUnavailable, view{Error: "the call could not be run; see the server log"})
		return
	}
	d.Result = resultOf(out, args)
	status, vw := http.StatusOK, view{Notice: "Ran " + d.Tool + ": execution " + out.ExecutionID + "."}
	if out.IsError {
		status, vw = http.StatusUnprocessableEntity, view{Error: out.Code + ": " + out.Message}
	}
	c.showPlayground(w, r, rq, d, status, vw)
}

func resultOf(out *tools.Outcome, args json.RawMessage) *runResult {
	res := &runResult{ExecutionID: out.ExecutionID, Status: string(out.Status), IsError: out.IsError, Code: out.Code,
		Message: out.Message, Text: out.Text, Structured: readableJSON(out.Structured), Arguments: readableJSON(args)}
	if eo, ok := out.ErrorObject(); ok {
		var a string
		if json.Unmarshal(eo.Details["approval_id"], &a) == nil {
			res.ApprovalID = a
		}
	}
	return res
}

// CanRun reports whether the viewer's key may call tools: the scope the
// console face needs, as /mcp does.
func (v Viewer) CanRun() bool { return slices.Contains(v.Scopes, keys.ScopeMCP) }

// readableJSON indents JSON with markup characters as they are (the page
// escapes them): "<b>" rather than "\u003cb\u003e". Bytes that are not
// JSON are shown as prettyJSON shows them.
func readableJSON(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if len(raw) == 0 || dec.Decode(&v) != nil {
		return prettyJSON(raw)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return prettyJSON(raw)
	}
	return strings.TrimSuffix(out.String(), "\n")
}
