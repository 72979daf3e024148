package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
)

// consoleClientPrefix starts the id of the operator console's clients.
// Dynamic registration names its clients "client_…" and a Client ID
// Metadata Document's id is an https URL, so no outside client can hold
// such an id: only ConsoleClient, in process, creates one.
const consoleClientPrefix = "console_"

// consoleClientName is the name the consent page shows for the console.
const consoleClientName = "toolhost console"

// scopesFor are the scopes a client may ask for. The console is toolhost
// itself: a user who signs in to it through OAuth delegates every scope
// of the key typed on the consent page, exactly as typing that key into
// the console's own sign-in form would. Any other client gets
// grantableScopes (admin and tools are never delegated to it).
func scopesFor(clientID string) []string {
	if strings.HasPrefix(clientID, consoleClientPrefix) {
		return keys.AllScopes
	}
	return grantableScopes
}

// ConsoleClient returns the id of the operator console's client for
// redirectURI (the console's callback on the origin the browser uses,
// which must be the issuer's, or http on a loopback address at the
// issuer's port),
// registering a public client (PKCE, no secret) in process when this
// replica knows none or the one it knew was purged. It bypasses dynamic
// registration's rate limits: it is not reachable from outside, and it
// creates at most one client per redirect URI a replica is reached at.
func (p *Provider) ConsoleClient(ctx context.Context, redirectURI string) (string, error) {
	kind, refusal := redirectKind(redirectURI)
	switch {
	case refusal != "":
		return "", fmt.Errorf("console redirect %q: %s", redirectURI, refusal)
	case kind == "private-use":
		return "", fmt.Errorf("console redirect %q: not a web origin", redirectURI)
	case kind == "https" && !sameOrigin(redirectURI, p.opts.Issuer):
		// The client may be delegated admin: its redirect stays on this
		// server, so a Host header cannot make it send codes elsewhere.
		return "", fmt.Errorf("console redirect %q: not on the issuer's origin %s (auth.oauth.public_url)", redirectURI, p.opts.Issuer)
	case kind == "loopback" && port(redirectURI) != port(p.opts.Issuer):
		// Loopback names (127.0.0.1, localhost, [::1]) may differ, the port
		// may not: one client per name, not one per port anyone asks for.
		return "", fmt.Errorf("console redirect %q: not on the issuer's port (%s)", redirectURI, p.opts.Issuer)
	}
	p.consoleMu.Lock()
	defer p.consoleMu.Unlock()
	if id, ok := p.consoleIDs[redirectURI]; ok {
		_, err := p.opts.Store.Client(ctx, id)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, identity.ErrNotFound) {
			return "", fmt.Errorf("console client: %w", err)
		}
	}
	c := identity.Client{ID: keys.NewID("console"), Name: consoleClientName, AuthMethod: "none",
		RedirectURIs: []string{redirectURI}, CreatedAt: p.opts.Now().UTC()}
	if err := p.opts.Store.CreateClient(ctx, c); err != nil {
		return "", fmt.Errorf("console client: %w", err)
	}
	p.purge.kick()
	if p.consoleIDs == nil {
		p.consoleIDs = map[string]string{}
	}
	p.consoleIDs[redirectURI] = c.ID
	return c.ID, nil
}

// ConsoleScopes is the scope parameter the console asks for: every scope
// a key can hold (the consent grants those the key holds).
func ConsoleScopes() string { return strings.Join(slices.Clone(keys.AllScopes), " ") }

// sameOrigin reports whether two absolute URLs share scheme and host (with
// port), compared case-insensitively.
func sameOrigin(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

// port is a URL's port, its scheme's default when it names none.
func port(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return ""
	case u.Port() != "":
		return u.Port()
	case u.Scheme == "https":
		return "443"
	}
	return "80"
}
