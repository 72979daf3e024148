package mcp

import (
	"context"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/catalog"
)

// Character tools: definitions with source "character" belong to the
// sessions that play that character, while the go-sdk server holds the
// tools of a whole account. This middleware adds the calling session's
// character tools to its tools/list and routes its calls of them to the
// pipeline, which resolves the name in that session again (tools.Executor
// .CharacterSpecs and customTool share one rule). A session's character
// changing sends no list_changed: its next tools/list shows the change.

func (s *Server) characterTools(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/list":
			res, err := next(ctx, method, req)
			lr, ok := res.(*sdk.ListToolsResult)
			if err != nil || !ok || lr.NextCursor != "" {
				return res, err
			}
			specs := s.characterSpecs(ctx, req)
			if len(specs) == 0 {
				return res, nil
			}
			out := *lr
			out.Tools = slices.Clone(lr.Tools)
			lang := s.requestLang(req.GetExtra())
			for _, sp := range specs {
				t := sdkTool(sp, lang)
				if i := slices.IndexFunc(out.Tools, func(x *sdk.Tool) bool { return x.Name == sp.Name }); i >= 0 {
					out.Tools[i] = t // the character's own definition runs here
				} else {
					out.Tools = append(out.Tools, t)
				}
			}
			return &out, nil
		case "tools/call":
			cr, ok := req.(*sdk.CallToolRequest)
			if !ok || cr.Params == nil || s.registered(ctx, req, cr.Params.Name) {
				break
			}
			for _, sp := range s.characterSpecs(ctx, req) {
				if sp.Name == cr.Params.Name {
					return s.handler(sp.Name, false)(ctx, cr)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// registered reports whether the account's server has a tool of that
// name (its calls reach the pipeline, which resolves the session's
// character there).
func (s *Server) registered(ctx context.Context, req sdk.Request, name string) bool {
	if _, ok := s.exec.Catalog().Lookup(name); ok {
		return true
	}
	if slices.ContainsFunc(s.exec.SessionSpecs(), func(sp catalog.Spec) bool { return sp.Name == name }) {
		return true
	}
	account := s.account(ctx, req.GetExtra())
	s.mu.Lock()
	defer s.mu.Unlock()
	as, ok := s.accounts[account]
	if !ok {
		return false
	}
	_, ok = as.custom[name]
	return ok
}

// characterSpecs are the character tools of the calling session; a store
// that does not answer leaves them out (and is logged).
func (s *Server) characterSpecs(ctx context.Context, req sdk.Request) []catalog.Spec {
	ss := req.GetSession()
	if ss == nil || ss.ID() == "" {
		return nil
	}
	specs, err := s.exec.CharacterSpecs(ctx, s.account(ctx, req.GetExtra()), ss.ID())
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "character tools of a session could not be read", "session_id", ss.ID(), "err", err)
		return nil
	}
	return specs
}
