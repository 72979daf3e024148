package websearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// tavily queries the Tavily search API: POST /search with a JSON body and the
// key as "Authorization: Bearer" (docs.tavily.com, API reference "Search").
// It filters domains natively (include_domains / exclude_domains).
type tavily struct {
	base *url.URL
	key  string
	http *httpClient
}

type tavilyRequest struct {
	Query          string   `json:"query"`
	MaxResults     int      `json:"max_results"`
	SearchDepth    string   `json:"search_depth"`
	Topic          string   `json:"topic"`
	TimeRange      string   `json:"time_range,omitempty"`
	IncludeDomains []string `json:"include_domains,omitempty"`
	ExcludeDomains []string `json:"exclude_domains,omitempty"`
}

type tavilyResponse struct {
	Query   string `json:"query"`
	Results *[]struct {
		Title         string `json:"title"`
		URL           string `json:"url"`
		Content       string `json:"content"`
		PublishedDate string `json:"published_date"`
	} `json:"results"`
}

func (t *tavily) search(ctx context.Context, q query) ([]hit, error) {
	in := tavilyRequest{
		Query:          q.Text,
		MaxResults:     q.want(),
		SearchDepth:    "basic",
		Topic:          "general",
		TimeRange:      q.Freshness,
		IncludeDomains: q.Allowed,
		ExcludeDomains: q.Blocked,
	}
	if q.Site != "" {
		in.IncludeDomains = []string{q.Site}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("tavily request: %w", err)
	}
	req, err := http.NewRequest(http.MethodPost, t.base.JoinPath("search").String(), bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("tavily request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.key)
	body, _, err := t.http.do(ctx, req, t.key)
	if err != nil {
		// 432 and 433 are Tavily's plan and pay-as-you-go limits: a quota
		// answer like 429, so the provider backs off instead of being
		// hammered on every call.
		if f, ok := err.(*failure); ok && (f.Status == 432 || f.Status == 433) {
			f.Kind = failRateLimited
		}
		return nil, err
	}
	var r tavilyResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, failf(failMalformed, "response is not Tavily JSON: %v", err)
	}
	if r.Results == nil {
		return nil, failf(failMalformed, "response has no \"results\" array")
	}
	hits := make([]hit, 0, len(*r.Results))
	for _, x := range *r.Results {
		hits = append(hits, hit{Title: x.Title, URL: x.URL, Snippet: x.Content, Published: x.PublishedDate})
	}
	return hits, nil
}
