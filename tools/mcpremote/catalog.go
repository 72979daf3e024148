package mcpremote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// Catalog sources.
const (
	SourceLive        = "live"
	SourceCached      = "cached"
	SourceUnavailable = "unavailable"
)

// Status is where a server's tools come from now.
type Status struct {
	Source   string
	Tools    []*sdk.Tool
	ListedAt time.Time // zero when never listed
	Err      string    // why it is not live
	// SaveErr says the tools of ListedAt (live, or cached from the
	// gateway's memory) are not the stored snapshot: saving them failed.
	// Until a save succeeds (tried again at each use of the server), a
	// restart or another replica shows the older snapshot.
	SaveErr string
}

// held is a link's last listing as the link holds it.
type held struct {
	tools    []*sdk.Tool
	listedAt time.Time
	saveErr  string // the listing is not the stored snapshot
}

// held returns the link's last listing (l.mu held).
func (l *link) held() held {
	h := held{tools: l.tools, listedAt: l.listedAt}
	if l.saveErr != nil {
		h.saveErr = fmt.Sprintf("the tools listed at %s could not be saved as the server's snapshot (the store refused them; see the server log); "+
			"the save is tried again at each use of the server, and until it succeeds a restart or another replica shows the older snapshot",
			l.listedAt.UTC().Format(time.RFC3339))
	}
	return h
}

var _ tools.RemoteTools = (*Gateway)(nil)

// status is the server's state after an ensure that returned err.
func (g *Gateway) status(ctx context.Context, srv Server, l *link, err error) Status {
	l.mu.Lock()
	h := l.held()
	l.mu.Unlock()
	return g.statusOf(ctx, srv, h, err)
}

// statusOf is the server's state after an ensure that returned err,
// given the link's last listing h. Not live, the tools are the stored
// snapshot's, or the listing in memory when its save failed and it is
// newer than the stored one: the tools last listed are never shown
// older than they are, and a snapshot is shown with its own time.
func (g *Gateway) statusOf(ctx context.Context, srv Server, h held, err error) Status {
	if err == nil {
		return Status{Source: SourceLive, Tools: h.tools, ListedAt: h.listedAt, SaveErr: h.saveErr}
	}
	st := Status{Source: SourceUnavailable, Err: describe(err)}
	snap, serr := g.opts.Store.GetMCPSnapshot(ctx, srv.AccountID, srv.ID)
	var ts []*sdk.Tool
	if serr == nil && json.Unmarshal(snap.Tools, &ts) != nil {
		serr = errors.New("the stored snapshot cannot be read")
	}
	switch {
	case h.saveErr != "" && h.tools != nil && (serr != nil || snap.ListedAt.Before(h.listedAt.Truncate(time.Millisecond))):
		st.Source, st.Tools, st.ListedAt, st.SaveErr = SourceCached, h.tools, h.listedAt, h.saveErr
	case serr == nil:
		st.Source, st.Tools, st.ListedAt = SourceCached, ts, snap.ListedAt
	}
	return st
}

// describe words an error for a caller: no internal addresses.
func describe(err error) string {
	if errors.Is(err, ErrNoKey) || errors.Is(err, ErrUnknownKey) {
		return err.Error()
	}
	if errors.Is(err, ErrNotAuthorized) || strings.Contains(err.Error(), ErrNotAuthorized.Error()) {
		return ErrNotAuthorized.Error()
	}
	if _, cause := AuthFailure(err); cause != nil {
		return cause.Error()
	}
	// The SDK words transport errors with %v: the sentinel is in the text.
	if errors.Is(err, egress.ErrBlockedAddress) || strings.Contains(err.Error(), egress.ErrBlockedAddress.Error()) {
		return "the server's address is private, loopback or link-local; the operator must list it in fetch.allow_private"
	}
	return egress.Describe(err)
}

// State asks the server now (probe) and returns where its tools come
// from.
func (g *Gateway) State(ctx context.Context, srv Server, probe bool) Status {
	l := g.linkFor(srv)
	pctx, cancel := context.WithTimeout(ctx, g.opts.ProbeTimeout)
	defer cancel()
	return g.status(ctx, srv, l, l.ensure(pctx, probe))
}

// known is what the gateway knows of a server's tools without asking it:
// the live listing in memory, else the snapshot.
func (g *Gateway) known(ctx context.Context, srv Server, l *link) Status {
	l.mu.Lock()
	live := l.sess != nil && l.tools != nil
	l.mu.Unlock()
	if live {
		return g.status(ctx, srv, l, nil)
	}
	return g.State(ctx, srv, false)
}

// errNotAsked is why a stored listing is not live: it asks no server.
var errNotAsked = errors.New("the server was not asked (this listing is built from what toolhost already knows)")

// stored is what the gateway knows of a server's tools without the
// network: the live listing in memory, else the snapshot in the store. A
// link busy talking to its server (its lock held by a connect or a
// listing) is not waited for: the snapshot answers.
func (g *Gateway) stored(ctx context.Context, srv Server) Status {
	g.mu.Lock()
	l := g.links[srv.ID]
	g.mu.Unlock()
	var h held
	if l != nil && l.mu.TryLock() {
		current := l.srv.UpdatedAt.Equal(srv.UpdatedAt)
		live := l.sess != nil && l.tools != nil && current
		if current {
			h = l.held()
		}
		l.mu.Unlock()
		if live {
			return g.statusOf(ctx, srv, h, nil)
		}
	}
	st := g.statusOf(ctx, srv, h, errNotAsked)
	st.Err = errNotAsked.Error()
	return st
}

// Unsaved is the server's last listing when its save failed, so it is
// not the stored snapshot (Status.SaveErr says so), for GET
// /mcp-servers/{id}, which otherwise shows the snapshot. It asks no
// server, and a link busy talking to its server is not waited for.
func (g *Gateway) Unsaved(srv Server) (Status, bool) {
	g.mu.Lock()
	l := g.links[srv.ID]
	g.mu.Unlock()
	if l == nil || !l.mu.TryLock() {
		return Status{}, false
	}
	defer l.mu.Unlock()
	if l.saveErr == nil || l.tools == nil || !l.srv.UpdatedAt.Equal(srv.UpdatedAt) {
		return Status{}, false
	}
	h := l.held()
	return Status{Tools: h.tools, ListedAt: h.listedAt, SaveErr: h.saveErr}, true
}

// RemoteListing implements tools.RemoteTools.
func (g *Gateway) RemoteListing(ctx context.Context, account string) (tools.RemoteListing, error) {
	return g.listing(ctx, account, func(srv Server) Status { return g.State(ctx, srv, true) })
}

// StoredListing implements tools.RemoteTools: the listing of what is
// known, asking no server.
func (g *Gateway) StoredListing(ctx context.Context, account string) (tools.RemoteListing, error) {
	return g.listing(ctx, account, func(srv Server) Status { return g.stored(ctx, srv) })
}

// listing lists the account's enabled servers and their tools, each
// server's state from state (run for all servers at once).
func (g *Gateway) listing(ctx context.Context, account string, state func(Server) Status) (tools.RemoteListing, error) {
	var out tools.RemoteListing
	servers, err := g.opts.Store.ListMCPServers(ctx, account)
	if err != nil {
		return out, fmt.Errorf("list MCP servers: %w", err)
	}
	states := make([]Status, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		if !srv.Enabled {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			states[i] = state(srv)
		}()
	}
	wg.Wait()
	now := g.opts.Now()
	seen := map[string]string{} // exposed name → provider id
	for i, srv := range servers {
		if !srv.Enabled {
			continue
		}
		st := states[i]
		rs := tools.RemoteServer{ID: srv.ID, Name: srv.Name, CatalogSource: st.Source, Tools: len(st.Tools)}
		if !st.ListedAt.IsZero() {
			at, age := st.ListedAt.UnixMilli(), now.Sub(st.ListedAt).Milliseconds()
			rs.ListedAt, rs.AgeMS = &at, &age
		}
		if st.Err != "" {
			e := st.Err
			rs.Error = &e
		}
		if st.SaveErr != "" {
			e := st.SaveErr
			rs.SnapshotError = &e
		}
		out.Servers = append(out.Servers, rs)
		provider := "mcp:" + srv.ID
		for _, t := range st.Tools {
			r, name, err := g.remote(srv, t, st.Source)
			if name == "" {
				name = srv.Name + Separator + t.Name
			}
			switch {
			case err != nil:
				out.Conflicts = append(out.Conflicts, tools.Conflict{Name: name, Winner: "", Shadowed: []string{provider}, Reason: err.Error()})
				continue
			case r == nil:
				continue // disabled by the account
			case seen[name] != "":
				out.Conflicts = append(out.Conflicts, tools.Conflict{Name: name, Winner: seen[name], Shadowed: []string{provider},
					Reason: fmt.Sprintf("the server lists more than one tool that is named %s here (%q); a call runs the first", name, t.Name)})
				continue
			}
			seen[name] = provider
			out.Tools = append(out.Tools, *r)
		}
	}
	return out, nil
}

// RemoteTool implements tools.RemoteTools.
func (g *Gateway) RemoteTool(ctx context.Context, account, name string) (*tools.Remote, error) {
	prefix, ok := splitName(name)
	if !ok {
		return nil, nil
	}
	servers, err := g.opts.Store.ListMCPServers(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("list MCP servers: %w", err)
	}
	for _, srv := range servers {
		if srv.Name != prefix || !srv.Enabled {
			continue
		}
		l := g.linkFor(srv)
		st := g.known(ctx, srv, l)
		if st.Source == SourceUnavailable {
			code := tools.CodeUpstreamUnavailable
			if c := AuthFailureCode(errors.New(st.Err)); c != "" {
				code = c // its token could not be obtained
			}
			return nil, tools.Errorf(code, "the MCP server %s cannot be reached (%s) and toolhost has no list of its tools; try again later", srv.Name, st.Err)
		}
		return l.byName(g, srv, st)[name], nil
	}
	return nil, nil
}

// byName is the listing's callable tools by exposed name (the first of
// a name wins, as in the catalog), built once per listing: a call looks
// its tool up here instead of rebuilding every spec.
func (l *link) byName(g *Gateway, srv Server, st Status) map[string]*tools.Remote {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.built != nil && l.builtAt.Equal(st.ListedAt) && l.builtSource == st.Source {
		return l.built
	}
	m := map[string]*tools.Remote{}
	for _, t := range st.Tools {
		r, exposed, err := g.remote(srv, t, st.Source)
		if err == nil && r != nil && m[exposed] == nil {
			m[exposed] = r
		}
	}
	l.built, l.builtAt, l.builtSource = m, st.ListedAt, st.Source
	return m
}

// remote makes a listed tool a tools.Remote: the name, the governance,
// the spec. A nil Remote with no error is a tool the account disabled.
func (g *Gateway) remote(srv Server, t *sdk.Tool, source string) (*tools.Remote, string, error) {
	if t == nil {
		return nil, "", errors.New("the server listed an empty tool")
	}
	name, err := ExposedName(srv.Name, t.Name)
	if err != nil {
		return nil, "", err
	}
	o := srv.Tools[t.Name]
	if o.Enabled != nil && !*o.Enabled {
		return nil, name, nil
	}
	side, sideBasis := sideEffect(t, o, srv.Defaults)
	slots, slotsBasis := []string{}, tools.BasisPlatform
	switch {
	case o.AllowedSlots != nil:
		slots, slotsBasis = *o.AllowedSlots, tools.BasisAccountOverride
	case srv.Defaults.AllowedSlots != nil:
		slots, slotsBasis = *srv.Defaults.AllowedSlots, tools.BasisServerDefault
	}
	listed, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		return nil, name, fmt.Errorf("the input schema of %q cannot be read", t.Name)
	}
	in, schemaBasis := offeredSchema(listed)
	raw, _ := json.Marshal(t)
	sum := sha256.Sum256(raw)
	desc := t.Description
	if desc == "" {
		desc = t.Name
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if title == "" {
		title = t.Name
	}
	spec := catalog.Spec{
		Name: name, Version: "mcp." + hex.EncodeToString(sum[:6]),
		Title:       catalog.Text{EN: title, ZH: title},
		Description: catalog.Text{EN: desc, ZH: desc},
		Input:       in,
		SideEffect:  side,
		ReplaySafe:  side == catalog.SideEffectNone,
		Annotations: catalog.Annotations{ReadOnly: side == catalog.SideEffectNone, Destructive: side == catalog.SideEffectIrreversible,
			OpenWorld: true},
	}
	if t.Annotations != nil {
		spec.Annotations.Idempotent = t.Annotations.IdempotentHint
	}
	deliveryBasis := tools.BasisPlatform
	if o.AsyncCapability != nil {
		spec.Async, deliveryBasis = *o.AsyncCapability, tools.BasisAccountOverride
		spec.DeferByDefault = o.DefaultDeliveryMode != nil && *o.DefaultDeliveryMode == "async_job"
	}
	if err := spec.Check(); err != nil {
		return nil, name, fmt.Errorf("%q cannot be offered: %w", t.Name, err)
	}
	timeout := srv.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rt := &remoteTool{g: g, srv: srv, remoteName: t.Name, spec: spec, timeout: timeout}
	pol, polBasis := requireApproval(o, srv.Defaults)
	return &tools.Remote{Tool: rt, ProviderID: "mcp:" + srv.ID, AllowedSlots: slots, SideEffectBasis: sideBasis,
		RequireApproval: pol, ApprovalBasis: polBasis,
		SlotsBasis: slotsBasis, SchemaBasis: schemaBasis, CatalogSource: source, DeliveryBasis: deliveryBasis}, name, nil
}

// sideEffect is the tool's side-effect level and where it came from: the
// account's override; else the annotations when they say anything of it
// (readOnlyHint: none; a destructiveHint, true or false, without it:
// irreversible, since the tool changes something outside toolhost); else
// the server's default; else the protocol's defaults (not read-only,
// destructive). A readOnlyHint of false is the hint's absence on the wire
// (the go-sdk omits it), so annotations with neither hint decide nothing.
// requireApproval is a tool's approval policy: the account's override,
// else the server's default, else none ("": the platform's side_effect).
func requireApproval(o Override, d Defaults) (approval.Policy, string) {
	switch {
	case o.RequireApproval != nil:
		return approval.Policy(*o.RequireApproval), approval.BasisAccountOverride
	case d.RequireApproval != nil:
		return approval.Policy(*d.RequireApproval), approval.BasisServerDefault
	}
	return "", ""
}

func sideEffect(t *sdk.Tool, o Override, d Defaults) (catalog.SideEffect, string) {
	a := t.Annotations
	switch {
	case o.SideEffectLevel != nil:
		return catalog.SideEffect(*o.SideEffectLevel), tools.BasisAccountOverride
	case a != nil && a.ReadOnlyHint:
		return catalog.SideEffectNone, tools.BasisDeclared
	case a != nil && a.DestructiveHint != nil:
		return catalog.SideEffectIrreversible, tools.BasisDeclared
	case d.SideEffectLevel != nil:
		return catalog.SideEffect(*d.SideEffectLevel), tools.BasisServerDefault
	}
	return catalog.SideEffectIrreversible, tools.BasisPlatform
}
