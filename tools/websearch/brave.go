package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// brave queries the Brave Search API: GET /res/v1/web/search with the key in
// X-Subscription-Token (api-dashboard.search.brave.com, "Web search"). Rate
// limits come back as 429 with X-RateLimit-Reset.
type brave struct {
	base *url.URL
	key  string
	http *httpClient
}

type braveResponse struct {
	Type string `json:"type"`
	Web  *struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
			PageAge     string `json:"page_age"`
		} `json:"results"`
	} `json:"web"`
}

var braveFreshness = map[string]string{"day": "pd", "week": "pw", "month": "pm", "year": "py"}

func (b *brave) search(ctx context.Context, q query) ([]hit, error) {
	v := url.Values{}
	v.Set("q", siteOperators(q))
	v.Set("count", strconv.Itoa(q.want()))
	if f := braveFreshness[q.Freshness]; f != "" {
		v.Set("freshness", f)
	}
	if l := braveLang(q.Lang); l != "" {
		v.Set("search_lang", l)
	}
	u := b.base.JoinPath("res", "v1", "web", "search")
	u.RawQuery = v.Encode()
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("brave request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", b.key)
	body, _, err := b.http.do(ctx, req, b.key)
	if err != nil {
		return nil, err
	}
	var r braveResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, failf(failMalformed, "response is not Brave Search JSON: %v", err)
	}
	if r.Type != "search" {
		return nil, failf(failMalformed, "response type is not \"search\"%s", excerpt([]byte(r.Type), ""))
	}
	if r.Web == nil { // Brave omits "web" when it found nothing
		return []hit{}, nil
	}
	hits := make([]hit, 0, len(r.Web.Results))
	for _, x := range r.Web.Results {
		hits = append(hits, hit{Title: x.Title, URL: x.URL, Snippet: x.Description, Published: x.PageAge})
	}
	return hits, nil
}

// braveLang maps a BCP 47 tag to Brave's search_lang codes, which are mostly
// ISO 639-1 with a few exceptions ("jp", "zh-hans", "zh-hant", "pt-br",
// "en-gb").
func braveLang(tag string) string {
	if tag == "" {
		return ""
	}
	t := strings.ToLower(tag)
	base, region, _ := strings.Cut(t, "-")
	switch {
	case base == "zh" && (strings.Contains(t, "hant") || region == "tw" || region == "hk" || region == "mo"):
		return "zh-hant"
	case base == "zh":
		return "zh-hans"
	case base == "ja":
		return "jp"
	case t == "pt-br":
		return "pt-br"
	case base == "pt":
		return "pt-pt"
	case t == "en-gb":
		return "en-gb"
	}
	return base
}
