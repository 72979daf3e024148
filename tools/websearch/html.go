package websearch

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// htmlSearch reads DuckDuckGo's no-JavaScript results page (POST /html/ with
// the form fields q, kl and df, as the page's own search form sends them). It
// needs no key, which makes it the embedded default.
//
// Page anatomy it relies on: each result is a div.result holding
// a.result__a (title; href is a //duckduckgo.com/l/?uddg=<target> redirect)
// and .result__snippet; ads carry the class result--ad and link to
// duckduckgo.com/y.js; a search without results shows div.no-results; a bot
// check answers 202 with an anomaly/challenge form instead of results.
type htmlSearch struct {
	base *url.URL
	http *httpClient
}

var htmlFreshness = map[string]string{"day": "d", "week": "w", "month": "m", "year": "y"}

// htmlRegions maps language tags to DuckDuckGo's kl region codes.
var htmlRegions = map[string]string{
	"en": "us-en", "en-us": "us-en", "en-gb": "uk-en", "en-au": "au-en", "en-ca": "ca-en",
	"zh": "cn-zh", "zh-cn": "cn-zh", "zh-hans": "cn-zh", "zh-tw": "tw-tzh", "zh-hant": "tw-tzh", "zh-hk": "hk-tzh",
	"de": "de-de", "fr": "fr-fr", "es": "es-es", "it": "it-it", "ja": "jp-jp", "ko": "kr-kr",
	"ru": "ru-ru", "pt": "pt-pt", "pt-br": "br-pt", "nl": "nl-nl", "pl": "pl-pl",
}

func (h *htmlSearch) search(ctx context.Context, q query) ([]hit, error) {
	form := url.Values{}
	form.Set("q", siteOperators(q))
	form.Set("b", "")
	if f := htmlFreshness[q.Freshness]; f != "" {
		form.Set("df", f)
	}
	if r := htmlRegions[strings.ToLower(q.Lang)]; r != "" {
		form.Set("kl", r)
	}
	req, err := http.NewRequest(http.MethodPost, h.base.JoinPath("html").String()+"/", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("html search request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	body, status, err := h.http.do(ctx, req, "")
	if err != nil {
		return nil, err
	}
	hits, err := parseHTMLResults(body)
	if err != nil {
		return nil, err
	}
	// DuckDuckGo answers a suspected bot with 202 and a challenge page; the
	// parser recognises the page, the status is a second witness.
	if status == http.StatusAccepted && len(hits) == 0 {
		return nil, failf(failRateLimited, "the engine answered with a bot check (HTTP 202)")
	}
	return hits, nil
}

// parseHTMLResults extracts organic results from a DuckDuckGo HTML page. It
// returns a *failure when the page is a bot check or not a results page.
func parseHTMLResults(body []byte) ([]hit, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return nil, failf(failMalformed, "unreadable HTML: %v", err)
	}
	if doc.Find("[class*='anomaly-modal'], #challenge-form, form[action*='anomaly']").Length() > 0 {
		return nil, failf(failRateLimited, "the engine answered with a bot check")
	}
	var hits []hit
	doc.Find("div.result").Each(func(_ int, s *goquery.Selection) {
		if s.HasClass("result--ad") || s.HasClass("result--no-result") {
			return
		}
		a := s.Find("a.result__a").First()
		href, ok := a.Attr("href")
		if !ok || href == "" || isAdLink(href) {
			return
		}
		sn := s.Find(".result__snippet").First()
		snippet, _ := sn.Html()
		title, _ := a.Html()
		h := hit{Title: title, URL: href, Snippet: snippet}
		// Some results carry a date in a bare span next to the display URL.
		s.Find(".result__extras__url > span").Each(func(_ int, sp *goquery.Selection) {
			if t := strings.TrimSpace(strings.ReplaceAll(sp.Text(), "\u00a0", " ")); h.Published == "" && cleanDate(t) != "" {
				h.Published = t
			}
		})
		hits = append(hits, h)
	})
	if len(hits) > 0 {
		return hits, nil
	}
	if doc.Find(".no-results, .result--no-result").Length() > 0 {
		return []hit{}, nil
	}
	// A page with the results container but only ads is an empty answer; a
	// page without it is something else (an error page, a changed layout).
	if doc.Find("#links, .results, div.serp__results").Length() > 0 {
		return []hit{}, nil
	}
	return nil, failf(failMalformed, "not a results page (no result list found)")
}

// isAdLink reports DuckDuckGo's ad click-through links.
func isAdLink(href string) bool {
	u, err := url.Parse(href)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "duckduckgo.com" || strings.HasSuffix(host, ".duckduckgo.com") {
		return strings.HasPrefix(u.Path, "/y.js") || u.Query().Has("ad_provider")
	}
	return false
}
