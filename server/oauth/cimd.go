package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/wire"
)

// Client ID Metadata Documents (MCP 2025-11-25): a client may use an https
// URL as its client_id instead of registering; the document at that URL
// describes it. The document is fetched by the server, so the fetch is an
// SSRF surface: https only, public addresses only (checked at dial time,
// after DNS), no redirects, 5 s, 16 KiB. Fetched clients are kept for
// cimdTTL and stored (grants refer to them).
const (
	cimdTTL      = 5 * time.Minute
	cimdMaxBytes = 16 << 10
)

var errCIMD = errors.New("client metadata document refused")

type cimd struct {
	client *http.Client
	st     identity.GrantStore
	now    func() time.Time
	stored func() // after a document is stored (starts a purge of expired clients)

	mu    sync.Mutex
	cache map[string]cimdEntry
}

type cimdEntry struct {
	c  *identity.Client
	at time.Time
}

func newCIMD(st identity.GrantStore, allowPrivate bool, now func() time.Time, stored func()) *cimd {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s", errCIMD, address)
		}
		a := ap.Addr().Unmap()
		if !allowPrivate && (!a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback()) {
			return fmt.Errorf("%w: %s is not a public address", errCIMD, a)
		}
		return nil
	}}
	tr := &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: 5 * time.Second, ResponseHeaderTimeout: 5 * time.Second, Proxy: nil}
	return &cimd{
		client: &http.Client{Transport: tr, Timeout: 5 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return fmt.Errorf("%w: redirects are not followed", errCIMD)
			}},
		st: st, now: now, stored: stored, cache: map[string]cimdEntry{},
	}
}

// isClientIDURL reports whether a client_id names a metadata document.
func isClientIDURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Path != "" && u.Path != "/" && u.Fragment == "" && u.User == nil
}

func (m *cimd) lookup(ctx context.Context, id string) (*identity.Client, error) {
	m.mu.Lock()
	e, ok := m.cache[id]
	m.mu.Unlock()
	if ok && m.now().Sub(e.at) < cimdTTL {
		return e.c, nil
	}
	c, err := m.fetch(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := m.st.PutClient(ctx, *c); err != nil {
		return nil, err
	}
	m.stored()
	m.mu.Lock()
	if len(m.cache) > 1000 {
		m.cache = map[string]cimdEntry{}
	}
	m.cache[id] = cimdEntry{c: c, at: m.now()}
	m.mu.Unlock()
	return c, nil
}

func (m *cimd) fetch(ctx context.Context, id string) (*identity.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCIMD, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: fetch %s: %w", errCIMD, id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered %d", errCIMD, id, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, cimdMaxBytes+1))
	if err != nil || len(body) > cimdMaxBytes {
		return nil, fmt.Errorf("%w: %s: unreadable or larger than 16 KiB", errCIMD, id)
	}
	if err := wire.Check(body); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errCIMD, id, err)
	}
	var doc struct {
		ClientID string `json:"client_id"`
		oauthex.ClientRegistrationMetadata
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errCIMD, id, err)
	}
	if doc.ClientID != id {
		return nil, fmt.Errorf("%w: its client_id %q is not its URL", errCIMD, doc.ClientID)
	}
	if doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != "none" {
		return nil, fmt.Errorf("%w: only public clients (token_endpoint_auth_method none) may use a metadata document", errCIMD)
	}
	c, refusal := clientFromMetadata(doc.ClientRegistrationMetadata)
	if refusal != "" {
		return nil, fmt.Errorf("%w: %s", errCIMD, refusal)
	}
	c.ID, c.AuthMethod, c.CreatedAt = id, "none", m.now().UTC()
	return c, nil
}

// clientFromMetadata validates the name and redirect URIs shared by
// registration and metadata documents.
func clientFromMetadata(m oauthex.ClientRegistrationMetadata) (*identity.Client, string) {
	name := strings.TrimSpace(m.ClientName)
	if refusal := checkClientName(name); refusal != "" {
		return nil, refusal
	}
	if name == "" {
		name = "unnamed client"
	}
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > maxRedirectURIs {
		return nil, "register between 1 and 8 redirect_uris"
	}
	native := false
	for _, u := range m.RedirectURIs {
		kind, msg := redirectKind(u)
		if msg != "" {
			return nil, msg
		}
		native = native || kind != "https"
	}
	return &identity.Client{Name: name, RedirectURIs: m.RedirectURIs, Native: native}, ""
}
