package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// mcpServer is one remote MCP server in the GET /mcp-servers shape.
type mcpServer struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	URL     string `json:"url"`
	Enabled bool   `json:"enabled"`
	Timeout string `json:"timeout"`
	Auth    struct {
		Type       string `json:"type"`
		Authorized *bool  `json:"authorized"`
	} `json:"auth"`
	Tools    json.RawMessage `json:"tools"`
	Defaults json.RawMessage `json:"defaults"`
	Catalog  struct {
		Source        *string  `json:"catalog_source"`
		ListedAt      *int64   `json:"listed_at"`
		Tools         []string `json:"tools"`
		Error         *string  `json:"error"`
		SnapshotError *string  `json:"snapshot_error"`
	} `json:"catalog"`
	// Age is how old the listing shown is, on the console's clock.
	Age string `json:"-"`
	// Overrides are the forms of its tools' overrides.
	Overrides []toolOverride `json:"-"`
}

// listing says what the listing a registration or refresh made found.
func (s mcpServer) listing() string {
	source := "not listed"
	if s.Catalog.Source != nil {
		source = *s.Catalog.Source
	}
	out := fmt.Sprintf("%s: %s, %d tools", s.Name, source, len(s.Catalog.Tools))
	if s.Catalog.Error != nil {
		out += " (" + *s.Catalog.Error + ")"
	}
	return out + "."
}

type mcpServersData struct {
	Servers []mcpServer
	// AuthorizeURL is where the user goes to connect a server that
	// needs a user's OAuth consent (the answer to that post only).
	AuthorizeURL string
}

// mcpServers lists the account's remote MCP servers through
// GET /mcp-servers (tools scope): status, the age of the listing shown,
// the tools, overrides and defaults.
func (c *Console) mcpServers(w http.ResponseWriter, r *http.Request, rq *request) {
	c.showMCPServers(w, r, rq, http.StatusOK, view{})
}

func (c *Console) showMCPServers(w http.ResponseWriter, r *http.Request, rq *request, status int, vw view) {
	d, _ := vw.Data.(*mcpServersData)
	if d == nil {
		d = &mcpServersData{}
	}
	vw.Title, vw.Nav, vw.Data = "Remote MCP servers", "mcp-servers", d
	var list struct {
		Data []mcpServer `json:"data"`
	}
	st, msg, err := c.apiCall(r.Context(), rq, http.MethodGet, "/mcp-servers", nil, &list)
	if err != nil {
		c.o.Logger.Error("console: mcp servers", "err", err)
		st, msg = http.StatusServiceUnavailable, "remote MCP servers cannot be read right now"
	}
	if msg != "" {
		vw.Error = strings.TrimSpace(vw.Error + " " + msg)
		c.render(w, st, "mcpservers", rq, vw)
		return
	}
	now := c.o.Now()
	for _, s := range list.Data {
		if s.Catalog.ListedAt != nil {
			s.Age = now.Sub(time.UnixMilli(*s.Catalog.ListedAt)).Round(time.Second).String()
		}
		s.Overrides = c.overridesOf(s, rq.csrf)
		d.Servers = append(d.Servers, s)
	}
	c.render(w, status, "mcpservers", rq, vw)
}

// registerMCPServer registers a server through POST /mcp-servers.
func (c *Console) registerMCPServer(w http.ResponseWriter, r *http.Request, rq *request) {
	f := r.PostForm
	body := map[string]any{"name": strings.TrimSpace(f.Get("name")), "url": strings.TrimSpace(f.Get("url"))}
	if t := strings.TrimSpace(f.Get("timeout")); t != "" {
		body["timeout"] = t
	}
	switch f.Get("auth") {
	case "bearer":
		body["auth"] = map[string]string{"type": "bearer", "token": f.Get("token")}
	case "oauth_authorization_code":
		body["auth"] = map[string]string{"type": "oauth_authorization_code"}
	}
	var out struct {
		Data mcpServer `json:"data"`
	}
	st, msg, err := c.apiCall(r.Context(), rq, http.MethodPost, "/mcp-servers", body, &out)
	c.afterMCPServerAction(w, r, rq, st, msg, err, "Registered "+out.Data.listing())
}

// mcpServerAction refreshes, deletes or starts the OAuth connection of
// one server through its REST route; another account's id is that
// route's 404.
func (c *Console) mcpServerAction(w http.ResponseWriter, r *http.Request, rq *request) {
	id := url.PathEscape(r.PathValue("id"))
	switch r.PostForm.Get("action") {
	case "refresh":
		var out struct {
			Data mcpServer `json:"data"`
		}
		st, msg, err := c.apiCall(r.Context(), rq, http.MethodPost, "/mcp-servers/"+id+"/refresh", nil, &out)
		c.afterMCPServerAction(w, r, rq, st, msg, err, "Refreshed "+out.Data.listing())
	case "override":
		c.setOverride(w, r, rq, id)
	case "delete":
		st, msg, err := c.apiCall(r.Context(), rq, http.MethodDelete, "/mcp-servers/"+id, nil, nil)
		c.afterMCPServerAction(w, r, rq, st, msg, err, "Deleted.")
	case "authorize":
		var out struct {
			Data struct {
				URL string `json:"authorization_url"`
			} `json:"data"`
		}
		st, msg, err := c.apiCall(r.Context(), rq, http.MethodPost, "/mcp-servers/"+id+"/authorize", nil, &out)
		if err == nil && msg == "" {
			c.showMCPServers(w, r, rq, http.StatusOK, view{Notice: "Open the link below to authorize toolhost at the server.",
				Data: &mcpServersData{AuthorizeURL: out.Data.URL}})
			return
		}
		c.afterMCPServerAction(w, r, rq, st, msg, err, "")
	default:
		c.showMCPServers(w, r, rq, http.StatusBadRequest, view{Error: "the action must be refresh, delete, authorize or override"})
	}
}

func (c *Console) afterMCPServerAction(w http.ResponseWriter, r *http.Request, rq *request, st int, msg string, err error, notice string) {
	if err != nil {
		c.o.Logger.Error("console: mcp server action", "err", err)
		st, msg = http.StatusServiceUnavailable, "the server cannot be changed right now"
	}
	if msg != "" {
		c.showMCPServers(w, r, rq, st, view{Error: msg})
		return
	}
	c.showMCPServers(w, r, rq, http.StatusOK, view{Notice: notice})
}
