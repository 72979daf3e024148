package websearch

import (
	"encoding/base64"
	"html"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	xhtml "golang.org/x/net/html"
	"golang.org/x/net/idna"
)

// Item is one cleaned search result, as the tool returns it.
type Item struct {
	Title       string `json:"title"`
	URL         string `json:"url"`
	Snippet     string `json:"snippet"`
	PublishedAt string `json:"published_at,omitempty"`
	Source      string `json:"source"`
}

const (
	maxTitleRunes   = 200
	maxSnippetRunes = 400
	maxUnwrap       = 4
)

// clean turns raw engine hits into at most q.Count items: URLs unwrapped and
// stripped of tracking, domain filters applied, duplicates merged, text
// cleaned. Hits with unusable URLs are dropped.
func clean(hits []hit, q query) []Item {
	out := make([]Item, 0, min(len(hits), q.Count))
	seen := make(map[string]int, len(hits))
	for _, h := range hits {
		u, ok := cleanURL(h.URL)
		if !ok || !domainAllowed(u.Hostname(), q) {
			continue
		}
		it := Item{
			Title:       cleanText(h.Title, maxTitleRunes),
			URL:         u.String(),
			Snippet:     cleanText(h.Snippet, maxSnippetRunes),
			PublishedAt: cleanDate(h.Published),
			Source:      strings.TrimPrefix(u.Hostname(), "www."),
		}
		if it.Title == "" {
			it.Title = it.Source
		}
		key := dedupeKey(u)
		if i, dup := seen[key]; dup {
			// The first occurrence keeps its rank; a later copy may still
			// know what the first one lacked.
			if out[i].Snippet == "" {
				out[i].Snippet = it.Snippet
			}
			if out[i].PublishedAt == "" {
				out[i].PublishedAt = it.PublishedAt
			}
			continue
		}
		if len(out) == q.Count {
			continue // keep merging into the ones we have
		}
		seen[key] = len(out)
		out = append(out, it)
	}
	return out
}

// trackingParams are query parameters that identify a campaign or a click,
// never the page. Prefixes end with "_".
var trackingParams = map[string]bool{
	"gclid": true, "gclsrc": true, "dclid": true, "gbraid": true, "wbraid": true,
	"fbclid": true, "msclkid": true, "yclid": true, "twclid": true, "ttclid": true,
	"igshid": true, "mc_cid": true, "mc_eid": true, "_ga": true, "_gl": true,
	"_hsenc": true, "_hsmi": true, "mkt_tok": true, "oly_anon_id": true, "oly_enc_id": true,
	"ref_src": true, "ref_url": true, "vero_id": true, "srsltid": true,
}

var trackingPrefixes = []string{"utm_", "pk_", "hsa_"}

func isTracking(name string) bool {
	n := strings.ToLower(name)
	if trackingParams[n] {
		return true
	}
	for _, p := range trackingPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// cleanURL unwraps redirect wrappers, keeps http(s) only and removes
// tracking parameters and text fragments. Parameter order and encoding of the
// remaining query are kept: some sites care.
func cleanURL(raw string) (*url.URL, bool) {
	raw = strings.TrimSpace(html.UnescapeString(raw))
	if strings.HasPrefix(raw, "//") {
		raw = "https:" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, false
	}
	for range maxUnwrap {
		inner, ok := unwrap(u)
		if !ok {
			break
		}
		if strings.HasPrefix(inner, "//") {
			inner = "https:" + inner
		}
		v, err := url.Parse(inner)
		if err != nil {
			return nil, false
		}
		u = v
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return nil, false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		kept := parts[:0]
		for _, p := range parts {
			if p == "" {
				continue
			}
			name, _, _ := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			if !isTracking(name) {
				kept = append(kept, p)
			}
		}
		u.RawQuery = strings.Join(kept, "&")
		u.ForceQuery = false
	}
	if strings.HasPrefix(u.Fragment, ":~:") {
		u.Fragment, u.RawFragment = "", ""
	}
	return u, true
}

// unwrap returns the target of a known redirect wrapper.
func unwrap(u *url.URL) (string, bool) {
	host := strings.ToLower(u.Hostname())
	q := u.Query()
	switch {
	case isHost(host, "duckduckgo.com") && strings.HasPrefix(u.Path, "/l/"):
		return nonEmpty(q.Get("uddg"))
	case strings.HasPrefix(host, "google.") || strings.Contains(host, ".google."):
		if u.Path == "/url" {
			if t := q.Get("q"); t != "" {
				return t, true
			}
			return nonEmpty(q.Get("url"))
		}
	case isHost(host, "bing.com") && u.Path == "/ck/a":
		// u=a1<base64url of the target>
		t := q.Get("u")
		if len(t) > 2 && strings.HasPrefix(t, "a1") {
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(t[2:], "="))
			if err == nil {
				return nonEmpty(string(b))
			}
		}
	case isHost(host, "r.search.yahoo.com"):
		// …/RU=<escaped target>/RK=…/RS=…
		if _, after, ok := strings.Cut(u.EscapedPath(), "/RU="); ok {
			enc, _, _ := strings.Cut(after, "/")
			if t, err := url.PathUnescape(enc); err == nil {
				return nonEmpty(t)
			}
		}
	}
	return "", false
}

func nonEmpty(s string) (string, bool) { return s, s != "" }

// isHost reports whether host is domain or one of its subdomains.
func isHost(host, domain string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}

// dedupeKey identifies a page regardless of scheme, a leading www., a
// trailing slash and the fragment.
func dedupeKey(u *url.URL) string {
	host := strings.TrimPrefix(u.Host, "www.")
	path := strings.TrimRight(u.EscapedPath(), "/")
	k := host + path
	if u.RawQuery != "" {
		k += "?" + u.RawQuery
	}
	return k
}

// domainAllowed applies site, allowed_domains and blocked_domains. Domains in
// q are already lower-case ASCII (normalized); the host is made so too.
//
// The host is put through IDNA (UTS #46 lookup) first, as a browser or the
// HTTP transport would before dialling it, so "ＢＬＯＣＫＥＤ.test" or
// "blocked。test" meet the lists as "blocked.test". A host that does not
// normalise is dropped whenever a filter is set.
func domainAllowed(host string, q query) bool {
	h, err := idna.Lookup.ToASCII(strings.ToLower(host))
	if err != nil {
		return len(q.Blocked) == 0 && q.Site == "" && len(q.Allowed) == 0
	}
	h = strings.TrimSuffix(h, ".")
	for _, d := range q.Blocked {
		if isHost(h, d) {
			return false
		}
	}
	if q.Site != "" && !isHost(h, q.Site) {
		return false
	}
	if len(q.Allowed) > 0 {
		for _, d := range q.Allowed {
			if isHost(h, d) {
				return true
			}
		}
		return false
	}
	return true
}

// cleanText strips markup, decodes entities (twice, for engines that escape
// already-escaped text), drops control and zero-width characters, collapses
// whitespace and caps the length on a rune boundary.
func cleanText(s string, maxRunes int) string {
	if s == "" {
		return ""
	}
	if !strings.Contains(s, "<") {
		// No markup: skip the tokenizer (and its 4 KiB buffer).
		return tidyText(html.UnescapeString(s), maxRunes)
	}
	var b strings.Builder
	z := xhtml.NewTokenizer(strings.NewReader(s))
	skip := 0
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			if z.Err() != io.EOF {
				b.WriteString(s) // not tokenizable: keep the raw text
			}
			break
		}
		switch tt {
		case xhtml.StartTagToken, xhtml.EndTagToken, xhtml.SelfClosingTagToken:
			name, _ := z.TagName()
			if n := string(name); n == "script" || n == "style" {
				if tt == xhtml.StartTagToken {
					skip++
				} else if skip > 0 {
					skip--
				}
			}
			// Block-level tags and <br> separate words; inline ones
			// (<b>, <sub>, <a>, ...) sit inside them.
			if blockTags[string(name)] {
				b.WriteByte(' ')
			}
		case xhtml.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		}
	}
	return tidyText(b.String(), maxRunes)
}

// tidyText decodes entities left after markup removal (engines that escape
// already-escaped text), drops control and zero-width characters, collapses
// whitespace and caps the length on a rune boundary.
func tidyText(t string, maxRunes int) string {
	if strings.Contains(t, "&") {
		t = html.UnescapeString(t)
	}
	t = strings.Map(func(r rune) rune {
		switch {
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff' || r == utf8.RuneError:
			return -1
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, t)
	t = strings.Join(strings.Fields(t), " ")
	if utf8.RuneCountInString(t) > maxRunes {
		r := []rune(t)
		t = strings.TrimRight(string(r[:maxRunes-1]), " ") + "…"
	}
	return t
}

var blockTags = map[string]bool{
	"br": true, "p": true, "div": true, "li": true, "ul": true, "ol": true, "td": true, "th": true,
	"tr": true, "table": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"hr": true, "blockquote": true, "pre": true, "section": true, "article": true, "dd": true, "dt": true,
}

var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02",
	time.RFC1123,
	time.RFC1123Z,
	"Mon, 2 Jan 2006 15:04:05 MST",
	"January 2, 2006",
}

// cleanDate returns an engine's date as RFC 3339 in UTC, or "" when it cannot
// be read with confidence (relative dates such as "3 days ago" included).
func cleanDate(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	for _, l := range dateLayouts {
		t, err := time.Parse(l, s)
		if err != nil {
			continue
		}
		if t.Year() < 1990 || t.Year() > 2200 {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	return ""
}
