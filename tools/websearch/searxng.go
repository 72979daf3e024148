package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// searxng queries a SearXNG instance's JSON API: GET /search?q=…&format=json
// (docs.searxng.org, "Search API"). The instance must have "json" among its
// search.formats; otherwise it answers 403, which fails over like any other
// HTTP error.
type searxng struct {
	base *url.URL
	http *httpClient
}

type searxngResponse struct {
	Query   string `json:"query"`
	Results *[]struct {
		URL           string  `json:"url"`
		Title         string  `json:"title"`
		Content       string  `json:"content"`
		PublishedDate *string `json:"publishedDate"`
	} `json:"results"`
}

func (s *searxng) search(ctx context.Context, q query) ([]hit, error) {
	v := url.Values{}
	v.Set("q", siteOperators(q))
	v.Set("format", "json")
	v.Set("pageno", "1")
	if q.Freshness != "" {
		v.Set("time_range", q.Freshness)
	}
	if q.Lang != "" {
		v.Set("language", q.Lang)
	}
	u := s.base.JoinPath("search")
	u.RawQuery = v.Encode()
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("searxng request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	body, _, err := s.http.do(ctx, req, "")
	if err != nil {
		return nil, err
	}
	var r searxngResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, failf(failMalformed, "response is not SearXNG JSON: %v", err)
	}
	if r.Results == nil {
		return nil, failf(failMalformed, "response has no \"results\" array")
	}
	hits := make([]hit, 0, len(*r.Results))
	for _, x := range *r.Results {
		h := hit{Title: x.Title, URL: x.URL, Snippet: x.Content}
		if x.PublishedDate != nil {
			h.Published = *x.PublishedDate
		}
		hits = append(hits, h)
	}
	return hits, nil
}
