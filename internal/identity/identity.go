// Package identity is who a call acts for, and what lets it act.
//
// Identity is the account, the API key and the
// scopes that authentication established, and the context helpers that
// carry them from the auth middleware to every face (MCP, /v1, the REST
// API) and into the pipeline. It is the one type for that; the faces read
// it, they do not copy it into types of their own.
// An identity comes from the runtime (a verified key or token, --dev, the
// command line), never from a request's body or a model's arguments.
//
// The embedded OAuth 2.1 authorization server's durable state lets a
// client act for an account (grants.go): clients, grants, authorization
// requests and tokens, kept by a GrantStore.
package identity

import (
	"context"
	"slices"
)

// Identity is who a call acts for.
type Identity struct {
	// AccountID owns what the call reads and writes (journal records,
	// sessions, tool definitions); "" means the process's own account
	// (stdio, toolhost call).
	AccountID string
	// KeyID is the API key the call was authenticated with ("" in --dev
	// and on the command line); OAuth tokens act for the key their grant
	// is bound to.
	KeyID string
	// Scopes are what the key or token may do (keys.ScopeMCP, …).
	Scopes []string
}

// Has reports whether the identity holds scope.
func (i Identity) Has(scope string) bool { return slices.Contains(i.Scopes, scope) }

type contextKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, contextKey{}, id)
}

// FromContext returns the identity ctx carries, and whether it carries one.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(contextKey{}).(Identity)
	return id, ok
}
