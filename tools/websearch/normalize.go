package websearch

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/tools"
)

// Normalize canonicalizes the arguments before the idempotency digest and the
// call: the query trimmed, whitespace collapsed and NFC-normalized; domains
// lower-case ASCII without scheme, path or leading "www."; domain lists sorted
// and deduplicated; lang a canonical BCP 47 tag. It enforces the 400-character
// query limit with its own code.
func (*Tool) Normalize(args wire.Object, _ tools.Reference) error {
	q, _ := args["query"].(string)
	q = strings.Join(strings.Fields(norm.NFC.String(q)), " ")
	if q == "" {
		return tools.Errorf(CodeInvalidInput, "query is empty; say what to search for")
	}
	if n := utf8.RuneCountInString(q); n > maxQueryRunes {
		return tools.Errorf(CodeQueryTooLong, "query has %d characters; the limit is %d — shorten it to the essential words", n, maxQueryRunes)
	}
	args["query"] = q

	if s, ok := args["site"].(string); ok {
		if strings.TrimSpace(s) == "" {
			delete(args, "site")
		} else {
			if err := refuseFilter(s); err != nil {
				return tools.Errorf(CodeInvalidInput, "site: %v", err)
			}
			d, err := normalizeDomain(s)
			if err != nil {
				return tools.Errorf(CodeInvalidInput, "site: %v", err)
			}
			args["site"] = d
		}
	}
	for _, field := range []string{"allowed_domains", "blocked_domains"} {
		raw, ok := args[field].([]any)
		if !ok {
			continue
		}
		seen := map[string]bool{}
		var list []string
		for i, v := range raw {
			s, _ := v.(string)
			if err := refuseFilter(s); err != nil {
				return tools.Errorf(CodeInvalidInput, "%s[%d]: %v", field, i, err)
			}
			d, err := normalizeDomain(s)
			if err != nil {
				return tools.Errorf(CodeInvalidInput, "%s[%d]: %v", field, i, err)
			}
			if !seen[d] {
				seen[d] = true
				list = append(list, d)
			}
		}
		if len(list) == 0 {
			delete(args, field)
			continue
		}
		sort.Strings(list)
		out := make([]any, len(list))
		for i, d := range list {
			out[i] = d
		}
		args[field] = out
	}
	if l, ok := args["lang"].(string); ok {
		l = strings.TrimSpace(l)
		if l == "" {
			delete(args, "lang")
		} else {
			tag, err := language.Parse(l)
			if err != nil {
				return tools.Errorf(CodeInvalidInput, "lang %q is not a language tag; use one such as en, zh-CN or de", l)
			}
			args["lang"] = tag.String()
		}
	}
	return nil
}

// normalizeDomain accepts "example.com", "https://www.example.com/path"
// or an internationalized name (refuseFilter has turned away wildcards and
// IP literals) and returns the lower-case
// ASCII domain. A leading "www." is dropped: people mean the site.
func normalizeDomain(s string) (string, error) {
	d := strings.ToLower(strings.TrimSpace(s))
	if strings.Contains(d, "://") {
		u, err := url.Parse(d)
		if err != nil || u.Hostname() == "" {
			return "", fmt.Errorf("%q is not a domain such as example.com", s)
		}
		d = u.Hostname()
	}
	if i := strings.IndexAny(d, "/?#"); i >= 0 {
		d = d[:i]
	}
	if h, _, ok := strings.Cut(d, ":"); ok {
		d = h
	}
	d = strings.TrimPrefix(d, "*.")
	d = strings.Trim(d, ".")
	d = strings.TrimPrefix(d, "www.")
	a, err := idna.Lookup.ToASCII(d)
	a = strings.Trim(a, ".") // "example.com。" maps to a trailing dot
	if err != nil || a == "" || len(a) > 253 {
		return "", fmt.Errorf("%q is not a domain such as example.com", s)
	}
	for _, label := range strings.Split(a, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", fmt.Errorf("%q is not a domain such as example.com", s)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return "", fmt.Errorf("%q is not a domain such as example.com", s)
			}
		}
	}
	return a, nil
}
