package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// pageNames are the templates that each fill the layout's "content".
var pageNames = []string{"signin", "overview", "executions", "execution", "approvals", "keys", "mcpservers", "grants", "extra", "error",
	"definitions", "sessions", "playground"}

var funcs = template.FuncMap{
	"pretty": prettyJSON,
	"millis": func(ms *int64) string {
		if ms == nil {
			return "—"
		}
		return time.UnixMilli(*ms).UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"list": func(s ...string) []string { return s },
	"ptr":  func(i int64) *int64 { return &i },
	"dur":  func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"pct":  func(f float64) string { return fmt.Sprintf("%.1f%%", f*100) },
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"query": query,
}

// query is a query string of key-value pairs (empty values left out),
// built by url.Values: template.URL keeps its = and & whole.
func query(kv ...string) template.URL {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	return template.URL(v.Encode())
}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// view is what the layout reads besides the page's own data.
type view struct {
	Title   string
	Nav     string
	Viewer  *Viewer
	CSRF    string
	Account string
	Pages   []Page
	Notice  string
	Error   string
	Data    any
}

func (c *Console) render(w http.ResponseWriter, status int, name string, rq *request, v view) {
	if rq != nil {
		v.Viewer, v.CSRF = &rq.Viewer, rq.csrf
		if v.Account == "" {
			v.Account = rq.AccountID
		}
	}
	v.Pages = c.o.Pages
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, v); err != nil {
		c.o.Logger.Error("console: render", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// refuse answers a request the console will not serve with a small page
// naming the machine code and the reason.
func (c *Console) refuse(w http.ResponseWriter, status int, code, msg string) {
	c.render(w, status, "error", nil, view{Title: "Refused", Error: msg, Data: code})
}

// prettyJSON indents JSON for reading; bytes that are not JSON are shown
// as they are.
func prettyJSON(b any) string {
	var raw []byte
	switch x := b.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	case string:
		raw = []byte(x)
	default:
		m, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		raw = m
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return string(raw)
	}
	return out.String()
}

// traceLink is the trace viewer URL of a trace id, or "" without one.
func (c *Console) traceLink(id string) string {
	if c.o.TraceURL == "" || id == "" {
		return ""
	}
	return strings.ReplaceAll(c.o.TraceURL, "{trace_id}", url.PathEscape(id))
}
