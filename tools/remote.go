package tools

import (
	"context"
	"fmt"
	"slices"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools/approval"
)

// Codes of tools on remote MCP servers (mcpremote).
const (
	// CodeUpstreamUnavailable: the MCP server cannot be reached now.
	CodeUpstreamUnavailable = "upstream_unavailable"
	// CodeOutcomeUnknown: the call was sent and the connection was lost
	// before its answer; it may or may not have run. It is journaled
	// uncertain and never retried by toolhost.
	CodeOutcomeUnknown = "outcome_unknown"
)

// RemoteTools are an account's tools on its remote MCP servers. The
// gateway (mcpremote) implements it; the Executor asks it for a name no
// builtin and no definition answers to.
type RemoteTools interface {
	// RemoteTool returns the remote tool a call of name runs for the
	// account, or nil when there is none.
	RemoteTool(ctx context.Context, account, name string) (*Remote, error)
	// RemoteListing lists the account's remote tools and servers, each
	// server asked now whether it answers (the runtime catalog).
	RemoteListing(ctx context.Context, account string) (RemoteListing, error)
	// StoredListing lists them from what is known without asking any
	// server (the live listing in memory, else the stored snapshot): it
	// never dials and never waits for a server, so a down or hanging
	// server cannot slow what uses it (the hosted catalog, the MCP
	// face's tools/list).
	StoredListing(ctx context.Context, account string) (RemoteListing, error)
}

// Remote is one tool of a remote MCP server as the pipeline runs it.
type Remote struct {
	// Tool's Spec carries the exposed name (NAME__tool), the remote input
	// schema and the side-effect level after overrides; its Call sends
	// the call to the server.
	Tool Tool
	// ProviderID is "mcp:" and the server's id.
	ProviderID string
	// AllowedSlots restrict the callers (empty: any), from the account's
	// override.
	AllowedSlots []string
	// Basis of side_effect_level and allowed_slots (runtime catalog).
	SideEffectBasis, SlotsBasis string
	// SchemaBasis is the basis of parameter_schema: tool_declared for the
	// schema as the server listed it, shallow_schema_projection when
	// toolhost offers a shallow projection of it instead.
	SchemaBasis string
	// RequireApproval is the account's approval policy of the tool (its
	// override, else the server's default; "" when neither sets one) and
	// ApprovalBasis where it came from.
	RequireApproval approval.Policy
	ApprovalBasis   string
	// CatalogSource is live or cached.
	CatalogSource string
	// DeliveryBasis is where the tool's async_capability and
	// default_delivery_mode came from: the account's override, else the
	// platform's default (inline only).
	DeliveryBasis string
}

// RemoteListing is what the runtime catalog shows of remote servers.
type RemoteListing struct {
	Tools     []Remote
	Conflicts []Conflict
	Servers   []RemoteServer
}

// RemoteServer is the state of one registered server in the runtime
// catalog: where its tools come from now and how old they are.
type RemoteServer struct {
	ID            string  `json:"id"`
	Name          string  `json:"name"`
	CatalogSource string  `json:"catalog_source"`
	ListedAt      *int64  `json:"listed_at"`
	AgeMS         *int64  `json:"age_ms"`
	Tools         int     `json:"tools"`
	Error         *string `json:"error"`
	// SnapshotError says the tools listed at ListedAt could not be saved
	// as the stored snapshot (a restart or another replica shows an
	// older one until a save succeeds); null when they are saved.
	SnapshotError *string `json:"snapshot_error"`
}

// remoteEntry looks up a remote tool and compiles its schema. A schema
// that does not compile is a tool failure: toolhost does not send
// arguments it could not validate.
func (e *Executor) remoteEntry(ctx context.Context, account, name string) (*Remote, *entry, error) {
	if e.opts.Remote == nil {
		return nil, nil, nil
	}
	r, err := e.opts.Remote.RemoteTool(ctx, account, name)
	if err != nil || r == nil {
		return nil, nil, err
	}
	spec := r.Tool.Spec()
	sch, err := e.schemas.getRemote(r.ProviderID, spec)
	if err != nil {
		return r, nil, Errorf(CodeInvalidRemoteSchema, "the MCP server's input schema of %s cannot be used, so toolhost will not call it: %s", name, err)
	}
	return r, &entry{tool: r.Tool, spec: spec, schema: sch.schema, props: sch.props}, nil
}

// CodeInvalidRemoteSchema: a remote tool's input schema does not compile.
const CodeInvalidRemoteSchema = "upstream_schema_invalid"

// RemoteSpecs returns the specs of the account's callable remote tools
// for the MCP face's tools/list: those no builtin or definition shadows.
// They come from what the gateway knows (StoredListing): a down or
// hanging server does not slow tools/list.
func (e *Executor) RemoteSpecs(ctx context.Context, account string) ([]catalog.Spec, error) {
	return e.storedRemote(ctx, account, func(_ Remote, s catalog.Spec) bool { return !e.shadowed(ctx, account, s.Name) })
}

// hostedRemote returns the specs of the account's remote tools a hosted
// loop may declare: the names and schemas Execute would run (after the
// account's overrides; a tool it disabled is not there), less those a
// builtin or a session builtin answers to and those whose schema does not
// compile (a call of them would fail before it is sent). Definitions
// shadow them in HostedCatalog's ToolSet. allowed_slots are the
// pipeline's to enforce at the call, as for definitions.
func (e *Executor) hostedRemote(ctx context.Context, account string) ([]catalog.Spec, error) {
	return e.storedRemote(ctx, account, func(r Remote, s catalog.Spec) bool {
		_, builtin := e.tools[s.Name]
		_, session := e.sessionTools[s.Name]
		if builtin || session {
			return false
		}
		_, err := e.schemas.getRemote(r.ProviderID, s)
		return err == nil
	})
}

// storedRemote lists the specs of the account's remote tools that keep
// accepts, from what the gateway knows without asking a server
// (RemoteTools.StoredListing).
func (e *Executor) storedRemote(ctx context.Context, account string, keep func(Remote, catalog.Spec) bool) ([]catalog.Spec, error) {
	if e.opts.Remote == nil {
		return nil, nil
	}
	l, err := e.opts.Remote.StoredListing(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("remote tools of %s: %w", account, err)
	}
	var out []catalog.Spec
	for _, r := range l.Tools {
		if s := r.Tool.Spec(); keep(r, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// shadowed reports whether a builtin or a definition answers to name.
func (e *Executor) shadowed(ctx context.Context, account, name string) bool {
	_, b := e.tools[name]
	_, s := e.sessionTools[name]
	return b || s || e.HasDefinition(ctx, account, "", name)
}

// addRemote puts the account's remote tools and servers into the runtime
// catalog.
func (e *Executor) addRemote(ctx context.Context, cat *RuntimeCatalog, account, slot string, common func(*RuntimeTool)) error {
	if e.opts.Remote == nil {
		return nil
	}
	l, err := e.opts.Remote.RemoteListing(ctx, account)
	if err != nil {
		return fmt.Errorf("runtime catalog: %w", err)
	}
	cat.MCPServers = l.Servers
	cat.Conflicts = append(cat.Conflicts, l.Conflicts...)
	for _, r := range l.Tools {
		spec := r.Tool.Spec()
		t := runtimeTool(spec, r.ProviderID, journal.ProviderMCP, "mcp", slices.Clone(r.AllowedSlots), r.SlotsBasis, basisInferred)
		t.SideEffectLevelBasis = r.SideEffectBasis
		t.RequireApproval, t.RequireApprovalBasis = string(r.RequireApproval), r.ApprovalBasis
		t.MetadataBasisDetail["side_effect_level"] = BasisScope{r.SideEffectBasis, basisScope[r.SideEffectBasis]}
		t.MetadataBasisDetail["allowed_slots"] = BasisScope{r.SlotsBasis, basisScope[r.SlotsBasis]}
		if r.SchemaBasis != "" {
			t.ParameterSchemaBasis = r.SchemaBasis
			t.MetadataBasisDetail["parameter_schema"] = BasisScope{r.SchemaBasis, basisScope[r.SchemaBasis]}
		}
		if r.DeliveryBasis != "" {
			t.MetadataBasisDetail["async_capability"] = BasisScope{r.DeliveryBasis, basisScope[r.DeliveryBasis]}
			t.MetadataBasisDetail["default_delivery_mode"] = BasisScope{r.DeliveryBasis, basisScope[r.DeliveryBasis]}
		}
		src := r.CatalogSource
		t.CatalogSource = &src
		// A builtin or a definition of this name shadows it: the catalog
		// marks that once every tool is in (finishRuntime).
		if d := slotDenial(spec.Name, slot, r.AllowedSlots); d != nil {
			t.unavailable(d.Message)
		}
		common(&t)
		cat.Tools = append(cat.Tools, t)
	}
	return nil
}

// HasRemote reports whether the account has a remote tool of that name
// (its server may be down: the call then says so).
func (e *Executor) HasRemote(ctx context.Context, account, name string) bool {
	if e.opts.Remote == nil {
		return false
	}
	r, err := e.opts.Remote.RemoteTool(ctx, account, name)
	return r != nil || err != nil
}

// Remote returns the executor's remote tools (nil without).
func (e *Executor) Remote() RemoteTools { return e.opts.Remote }
