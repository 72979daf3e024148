package v1

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools/approval"
)

// The Responses web search tools (web_search, web_search_preview and their
// dated versions) are served by the hosted web_search, and fetch_page when
// the model opens a page: the loop runs them like any hosted call (metered,
// limited, journaled), and they come back as web_search_call items rather
// than mcp_call ones; the final text's links to a result get url_citation
// annotations.

// Names of the hosted tools that serve web search.
const (
	searchToolName = "web_search"
	openToolName   = "fetch_page"
)

// webSearchDecl is the web search tool a request declared.
type webSearchDecl struct {
	// hosted are the hosted tools serving it: web_search, and fetch_page
	// when published.
	hosted []string
	// onlyHere are those the request enabled only for web search (not
	// listed in mcp_list_tools).
	onlyHere map[string]bool
}

func isWebSearchTool(typ string) bool {
	for _, p := range []string{"web_search", "web_search_preview"} {
		if typ == p || strings.HasPrefix(typ, p+"_20") {
			return true
		}
	}
	return false
}

// webSearchTool reads a web search tool: its domain filters become
// arguments of every web_search and fetch_page call the model makes, over
// whatever the model wrote.
func (rr *responsesRequest) webSearchTool(item json.RawMessage, param string) error {
	var ws struct {
		Filters *struct {
			AllowedDomains []string `json:"allowed_domains"`
			BlockedDomains []string `json:"blocked_domains"`
		} `json:"filters"`
	}
	if err := json.Unmarshal(item, &ws); err != nil {
		return badRequest(ReasonInvalidRequest, param+".filters", "filters must be an object with lists of domains: "+err.Error())
	}
	if rr.search != nil {
		return badRequest(ReasonInvalidRequest, param, "declare one web search tool")
	}
	var allowed, blocked []string
	if f := ws.Filters; f != nil {
		allowed, blocked = f.AllowedDomains, f.BlockedDomains
	}
	return rr.declareWebSearch(rr.h, param, allowed, blocked)
}

// declareWebSearch makes the request's web search, served by the hosted
// tools, with the caller's domain filters (none when both are empty).
func (hr *hostedRequest) declareWebSearch(h *Handler, param string, allowed, blocked []string) error {
	pub := h.published()
	if _, ok := pub.Lookup(searchToolName); !ok {
		return badRequest(ReasonToolTypeUnsupported, param+".type", "web search is served here by the hosted web_search tool, which this server does not publish (no search provider is configured)")
	}
	d := &webSearchDecl{hosted: []string{searchToolName}, onlyHere: map[string]bool{}}
	fixed := map[string]json.RawMessage{}
	const maxDomains = 20 // the web_search tool's own limit
	if len(allowed) > maxDomains || len(blocked) > maxDomains {
		return badRequest(ReasonInvalidRequest, param+".filters", fmt.Sprintf("at most %d allowed and %d blocked domains", maxDomains, maxDomains))
	}
	if len(allowed) > 0 {
		fixed["allowed_domains"], _ = json.Marshal(allowed)
	}
	if len(blocked) > 0 {
		fixed["blocked_domains"], _ = json.Marshal(blocked)
	}
	if _, ok := pub.Lookup(openToolName); ok {
		d.hosted = append(d.hosted, openToolName)
	}
	if len(fixed) > 0 {
		// fetch_page takes the same filters: a page opened is held to them.
		hr.hosted.Fixed = map[string]map[string]json.RawMessage{}
		for _, n := range d.hosted {
			hr.hosted.Fixed[n] = fixed
		}
	}
	hr.search = d
	return nil
}

// enableWebSearch adds the hosted tools serving the declared web search to
// those enabled, never asking for approval (the official tool does not).
func (hr *hostedRequest) enableWebSearch(enabled map[string]bool) {
	if hr.search == nil {
		return
	}
	for _, n := range hr.search.hosted {
		if !enabled[n] {
			hr.search.onlyHere[n] = true
			enabled[n] = true
			addPolicy(&hr.hosted.Approval, declPolicy{tools: map[string]approval.Policy{n: approval.Never}}, []string{n})
		}
	}
	hr.declared = true
}

// servesSearch says whether a hosted call serves the web search.
func (hr *hostedRequest) servesSearch(name string) bool {
	if hr.search == nil {
		return false
	}
	for _, n := range hr.search.hosted {
		if n == name {
			return true
		}
	}
	return false
}

// foundResults are the web search results of a finished run, in order.
func (hr *hostedRequest) foundResults(res *loop.Result) []searchResult {
	var found []searchResult
	for _, rr := range res.Rounds {
		for _, c := range rr.Calls {
			if hr.servesSearch(c.Name) {
				found = append(found, searchResults(c)...)
			}
		}
	}
	return found
}

// webSearchCallItem is a web_search_call output item.
type (
	webSearchCallItem struct {
		Action webSearchAction `json:"action"`
		ID     string          `json:"id"`
		Status string          `json:"status"`
		Type   string          `json:"type"`
	}
	webSearchAction struct {
		Query   *string        `json:"query,omitempty"`
		Sources []searchSource `json:"sources,omitempty"`
		Type    string         `json:"type"`
		URL     *string        `json:"url,omitempty"`
	}
	searchSource struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	}
)

// newWebSearchCallItem renders a hosted web_search or fetch_page call; done
// says whether it has finished.
func newWebSearchCallItem(c loop.Call, done bool) webSearchCallItem {
	it := webSearchCallItem{ID: "ws_" + c.ID, Type: "web_search_call", Status: "in_progress"}
	var args struct {
		Query string `json:"query"`
		URL   string `json:"url"`
	}
	_ = json.Unmarshal(c.Args, &args) // a model's bad arguments: an empty action
	if c.Name == openToolName {
		it.Action = webSearchAction{Type: "open_page", URL: ref(args.URL)}
	} else {
		it.Action = webSearchAction{Type: "search", Query: ref(args.Query)}
	}
	if !done {
		return it
	}
	it.Status = "completed"
	if c.Status == loop.StatusFailed || c.IsError {
		it.Status = "failed"
	}
	for _, r := range searchResults(c) {
		it.Action.Sources = append(it.Action.Sources, searchSource{Type: "url", URL: r.URL})
	}
	return it
}

// searchResult is a result of a web_search call, as its output holds it.
type searchResult struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// searchResults are the results of a finished web_search call, from its
// structured content (none for a failed call); a page fetch_page opened
// counts as a result.
func searchResults(c loop.Call) []searchResult {
	if c.IsError || c.Status == loop.StatusFailed {
		return nil
	}
	var out struct {
		Results []searchResult `json:"results"`
		URL     string         `json:"url"`
		Title   string         `json:"title"`
	}
	if json.Unmarshal(c.Structured, &out) != nil {
		return nil
	}
	if c.Name == openToolName {
		if out.URL == "" {
			return nil
		}
		return []searchResult{{URL: out.URL, Title: out.Title}}
	}
	return out.Results
}

// urlCitation is a url_citation annotation of an output_text part; the
// indices count characters (Unicode code points) of the text.
type urlCitation struct {
	EndIndex   int    `json:"end_index"`
	StartIndex int    `json:"start_index"`
	Title      string `json:"title"`
	Type       string `json:"type"`
	URL        string `json:"url"`
}

// citations are the url_citation annotations of text: one per place the
// text writes the URL of a result, in the order of the text. A URL that
// another result's URL extends is cited only where the longer one is not.
func citations(text string, results []searchResult) []urlCitation {
	out := []urlCitation{}
	taken := make([]bool, len(text))
	// Longest URLs first, so that a prefix does not claim a longer link.
	order := make([]searchResult, 0, len(results))
	seen := map[string]bool{}
	for _, r := range results {
		if r.URL != "" && !seen[r.URL] {
			seen[r.URL] = true
			order = append(order, r)
		}
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && len(order[j].URL) > len(order[j-1].URL); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	type span struct {
		start, end int
		r          searchResult
	}
	var spans []span
	for _, r := range order {
		for from := 0; from < len(text); {
			k := strings.Index(text[from:], r.URL)
			if k < 0 {
				break
			}
			start, end := from+k, from+k+len(r.URL)
			from = end
			if taken[start] || taken[end-1] {
				continue
			}
			for i := start; i < end; i++ {
				taken[i] = true
			}
			spans = append(spans, span{start, end, r})
		}
	}
	for i := 1; i < len(spans); i++ {
		for j := i; j > 0 && spans[j].start < spans[j-1].start; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
	for _, s := range spans {
		out = append(out, urlCitation{
			Type: "url_citation", URL: s.r.URL, Title: s.r.Title,
			StartIndex: utf8.RuneCountInString(text[:s.start]),
			EndIndex:   utf8.RuneCountInString(text[:s.end]),
		})
	}
	return out
}
