package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// cmdMCPServers is `toolhost mcp-servers probe URL`: toolhost's MCP client
// (the gateway) against one server, without a store: it initializes,
// lists the tools as the catalog would offer them and, with --call, calls
// one through the pipeline. The MCP conformance suite's client scenarios
// run it (e2e/mcp-client-conformance.test.mjs).
// mcpServersUsage answers a command line that names no probe: the usage
// when asked for, else a usage error.
func mcpServersUsage(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		writeCommandUsage(stdout, newFlagSet("mcp-servers"))
		return exitOK
	}
	fmt.Fprintf(stderr, "toolhost mcp-servers: the one subcommand is probe URL\n")
	return exitUsage
}

func cmdMCPServers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "probe" {
		return mcpServersUsage(args, stdout, stderr)
	}
	fs := newFlagSet("mcp-servers probe")
	var c common
	fs.StringVar(&c.config, "config", "", "optional JSON config `FILE`: fetch.allow_private (loopback and intranet servers), mcp_servers")
	call := fs.String("call", "", "call the remote `TOOL` (its own name) after listing")
	callArgs := fs.String("args", "{}", "the call's arguments as a JSON `OBJECT`")
	bearerEnv := fs.String("bearer-env", "", "send the bearer token from the environment `VARIABLE`")
	oauthCode := fs.Bool("oauth", false, "authorize with oauth_authorization_code, following the authorization server's redirect itself (for servers that approve without a user, like the conformance suite's)")
	clientID := fs.String("client-id", "", "with --oauth, the pre-registered client `ID` (else toolhost registers itself dynamically)")
	clientSecretEnv := fs.String("client-secret-env", "", "with --oauth and --client-id, the client secret from the environment `VARIABLE`")
	timeout := fs.Duration("timeout", 30*time.Second, "the call's `TIMEOUT`")
	approve := fs.Bool("approve", false, "approve the --call if its approval policy asks (without it such a call ends approval_required, exit 1)")
	if err := parseFlags(ctx, fs, args[1:], &c); err != nil {
		return exitCodeOf(err, stderr, "mcp-servers probe")
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "toolhost mcp-servers probe: give exactly one URL\n")
		return exitUsage
	}
	u, err := mcpremote.CheckURL(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "toolhost mcp-servers probe: the URL %s\n", err)
		return exitUsage
	}
	dial, err := egress.DialContext(c.cfg.Fetch.AllowPrivate, 10*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost mcp-servers probe: %v\n", err)
		return exitUsage
	}
	srv, sealer, err := probeServer(u, *timeout, *bearerEnv, *oauthCode, *clientID, *clientSecretEnv)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost mcp-servers probe: %v\n", err)
		return exitUsage
	}
	st := mcpremote.NewMemStore()
	if err := st.CreateMCPServer(ctx, srv, 0); err != nil {
		return exitStartup
	}
	cfg := c.cfg.MCPServers
	gw := mcpremote.New(mcpremote.Options{Store: st, Sealer: sealer, Dial: dial, ProbeTimeout: max(cfg.ProbeTimeout.D(), 10*time.Second),
		MaxResultBytes: cfg.MaxResultBytes, Version: version})
	defer gw.Close()
	if *oauthCode {
		if srv, err = probeAuthorize(ctx, gw, st, srv, dial); err != nil {
			fmt.Fprintf(stderr, "toolhost mcp-servers probe: --oauth: %v\n", err)
			return exitStartup
		}
	}
	exec, err := tools.NewExecutor(tools.Options{Remote: gw})
	if err != nil {
		return exitStartup
	}
	state, err := gw.Refresh(ctx, srv)
	out := probeReport{URL: u, CatalogSource: state.Source, Tools: []probeTool{}, Conflicts: []tools.Conflict{}}
	if err != nil {
		out.Error = state.Err
	}
	listing, lerr := exec.Remote().StoredListing(ctx, tools.LocalAccount)
	if lerr == nil {
		for _, r := range listing.Tools {
			s := r.Tool.Spec()
			out.Tools = append(out.Tools, probeTool{Name: s.Name, SideEffectLevel: string(s.SideEffect), SideEffectBasis: r.SideEffectBasis})
		}
		out.Conflicts = append(out.Conflicts, listing.Conflicts...)
	}
	code := exitOK
	if state.Source != mcpremote.SourceLive {
		code = exitStartup
	}
	if *call != "" && code == exitOK {
		name, nerr := mcpremote.ExposedName(srv.Name, *call)
		if nerr != nil {
			fmt.Fprintf(stderr, "toolhost mcp-servers probe: --call: %v\n", nerr)
			return exitUsage
		}
		res, err := exec.Execute(ctx, tools.Proposal{Tool: name, Args: json.RawMessage(*callArgs), Timeout: *timeout,
			Caller:  tools.Caller{Face: "cli", Identity: identity.Identity{AccountID: tools.LocalAccount}},
			Confirm: confirmer(*approve, nil, stderr)})
		if err != nil {
			fmt.Fprintf(stderr, "toolhost mcp-servers probe: %v\n", err)
			return exitStartup
		}
		out.Call = &probeCall{Tool: name, Status: string(res.Status), Text: res.Text, Structured: res.Structured}
		if res.IsError {
			out.Call.Error = &probeError{Code: res.Code, Message: res.Message}
			code = exitToolError
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
	return code
}

// probeServer is the one server a probe talks to, with its secrets sealed
// under a key of this run's own: nothing is stored.
func probeServer(u string, timeout time.Duration, bearerEnv string, oauthCode bool, clientID, clientSecretEnv string) (mcpremote.Server, *mcpremote.Sealer, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return mcpremote.Server{}, nil, err
	}
	sealer, err := mcpremote.NewSealer(key)
	if err != nil {
		return mcpremote.Server{}, nil, err
	}
	srv := mcpremote.Server{ID: "probe", AccountID: tools.LocalAccount, Name: "probe", URL: u, Enabled: true,
		Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, Timeout: timeout, UpdatedAt: time.Now()}
	if bearerEnv != "" {
		srv.Auth.Type = mcpremote.AuthBearer
		if srv.Sealed, err = sealer.Seal(srv.AccountID, srv.ID, mcpremote.Secrets{BearerToken: os.Getenv(bearerEnv)}); err != nil {
			return mcpremote.Server{}, nil, err
		}
	}
	if oauthCode {
		srv.Auth = mcpremote.Auth{Type: mcpremote.AuthAuthorizationCode, ClientID: clientID}
		if clientSecretEnv != "" {
			if srv.Sealed, err = sealer.Seal(srv.AccountID, srv.ID, mcpremote.Secrets{ClientSecret: os.Getenv(clientSecretEnv)}); err != nil {
				return mcpremote.Server{}, nil, err
			}
		}
	}
	return srv, sealer, nil
}

// probeRedirect is the probe's redirect URL: never dialed, the probe
// reads the code from the authorization server's redirect to it.
const probeRedirect = "http://127.0.0.1/oauth/callback"

// probeAuthorize runs the authorization-code flow the way a registered
// server's is run (Gateway.Authorize, then the callback's Complete), with
// the probe in the user's place: it opens the authorization URL and
// reads the code from the redirect instead of following it. Only an
// authorization server that approves without a user lets that succeed.
func probeAuthorize(ctx context.Context, gw *mcpremote.Gateway, st mcpremote.Store, srv mcpremote.Server,
	dial func(ctx context.Context, network, addr string) (net.Conn, error)) (mcpremote.Server, error) {
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	authURL, err := gw.Authorize(actx, srv, probeRedirect)
	if err != nil {
		return srv, err
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(actx, http.MethodGet, authURL, nil)
	if err != nil {
		return srv, fmt.Errorf("the authorization URL: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return srv, fmt.Errorf("open the authorization URL: %w", err)
	}
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return srv, fmt.Errorf("the authorization server did not redirect (status %d): %w", resp.StatusCode, err)
	}
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return srv, fmt.Errorf("the authorization server refused: %s %s", e, q.Get("error_description"))
	}
	if _, _, err := gw.Complete(actx, q.Get("state"), q.Get("code"), q.Get("iss")); err != nil {
		return srv, err
	}
	return st.GetMCPServer(ctx, srv.AccountID, srv.ID)
}

type probeReport struct {
	URL           string           `json:"url"`
	CatalogSource string           `json:"catalog_source"`
	Error         string           `json:"error,omitempty"`
	Tools         []probeTool      `json:"tools"`
	Conflicts     []tools.Conflict `json:"conflicts"`
	Call          *probeCall       `json:"call,omitempty"`
}

type probeTool struct {
	Name            string `json:"name"`
	SideEffectLevel string `json:"side_effect_level"`
	SideEffectBasis string `json:"side_effect_level_basis"`
}

type probeCall struct {
	Tool       string          `json:"tool"`
	Status     string          `json:"status"`
	Text       string          `json:"text"`
	Structured json.RawMessage `json:"structured_content,omitempty"`
	Error      *probeError     `json:"error,omitempty"`
}

type probeError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
