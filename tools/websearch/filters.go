package websearch

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// refuseFilter rejects what the domain filters (site, allowed_domains,
// blocked_domains) must not hold, before the domain is normalised:
// wildcards (a domain already covers its subdomains, and "*.example.org"
// was silently read as "example.org") and IP literals in any spelling (a
// search engine's site: operator does not match addresses, and a filter on
// one would silently keep or drop nothing).
func refuseFilter(s string) error {
	d := strings.ToLower(strings.TrimSpace(s))
	if strings.Contains(d, "*") {
		return fmt.Errorf("%q: wildcards are not accepted; a domain already covers its subdomains, so write %q", s, strings.TrimLeft(strings.TrimLeft(d, "*"), "."))
	}
	host := d
	if strings.Contains(host, "://") {
		if u, err := url.Parse(host); err == nil {
			host = u.Hostname()
		}
	}
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if strings.HasPrefix(host, "[") {
		if i := strings.Index(host, "]"); i > 0 {
			host = host[1:i]
		}
	} else if h, _, ok := strings.Cut(host, ":"); ok && strings.Count(host, ":") == 1 {
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	if _, err := netip.ParseAddr(host); err == nil || numericHost(host) {
		return fmt.Errorf("%q is an IP address; the filters take domain names such as example.org", s)
	}
	return nil
}

// numericHost reports whether the last label is a number (decimal, octal or
// hex): "127.1", "0x7f.0.0.1" and "2130706433" are addresses to a
// resolver, and no top-level domain is numeric.
func numericHost(h string) bool {
	labels := strings.Split(h, ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		if last == "" {
			return true
		}
		for _, r := range last {
			if !strings.ContainsRune("0123456789abcdef", r) {
				return false
			}
		}
		return true
	}
	for _, r := range last {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
