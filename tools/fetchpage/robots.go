package fetchpage

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/temoto/robotstxt"
	"golang.org/x/sync/singleflight"
)

// robotsMaxBytes caps a robots.txt body (Google reads 500 KiB).
const robotsMaxBytes = 512 << 10

// robotsMaxHosts bounds the robots cache; past it the oldest half is dropped.
const robotsMaxHosts = 4096

// robots checks URLs against their host's robots.txt, fetched through the
// same guarded client and cached per scheme+host. The status convention is
// the parser library's (and Google's): 2xx parse, 4xx allow all, 5xx
// disallow all.
type robots struct {
	t     *Tool
	ttl   time.Duration
	now   func() time.Time
	group singleflight.Group
	mu    sync.Mutex
	hosts map[string]robotsEntry
}

type robotsEntry struct {
	data    *robotstxt.RobotsData
	expires time.Time
}

// check returns nil when the robots.txt of u's host lets our agent fetch u,
// errRobots when it does not, or the error that kept robots.txt from being
// read (refused address, timeout, ...).
func (r *robots) check(ctx context.Context, u *url.URL) error {
	if r == nil {
		return nil
	}
	key := u.Scheme + "://" + u.Host
	data, err := r.lookup(ctx, key)
	if err != nil {
		return err
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	if !data.TestAgent(path, robotsAgent) {
		return fmt.Errorf("%s: %w", quoteURL(u), errRobots)
	}
	return nil
}

func (r *robots) lookup(ctx context.Context, key string) (*robotstxt.RobotsData, error) {
	r.mu.Lock()
	e, ok := r.hosts[key]
	r.mu.Unlock()
	if ok && r.now().Before(e.expires) {
		return e.data, nil
	}
	v, err, _ := r.group.Do(key, func() (any, error) {
		ru, err := url.Parse(key + "/robots.txt")
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errInvalidURL, err)
		}
		// No robots check for robots.txt itself; the domain lists still
		// apply to its redirects through hopState.
		hs := &hopState{}
		defer r.t.budget.release(hs)
		resp, err := r.t.get(ctx, ru, hs, nil)
		if err != nil {
			return nil, fmt.Errorf("robots.txt: %w", err)
		}
		body := resp.Body
		if len(body) > robotsMaxBytes {
			body = body[:robotsMaxBytes]
		}
		data, err := robotstxt.FromStatusAndBytes(resp.Status, body)
		if err != nil {
			// Unparseable robots.txt: treat as no rules, as crawlers do.
			data, _ = robotstxt.FromStatusAndBytes(404, nil)
		}
		r.mu.Lock()
		if len(r.hosts) >= robotsMaxHosts {
			r.evictOldest()
		}
		r.hosts[key] = robotsEntry{data: data, expires: r.now().Add(r.ttl)}
		r.mu.Unlock()
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*robotstxt.RobotsData), nil
}

// evictOldest drops the half of the entries that expire first. Called with
// mu held.
func (r *robots) evictOldest() {
	var cut time.Time
	n := 0
	for _, e := range r.hosts {
		if n == 0 || e.expires.Before(cut) {
			cut = e.expires
		}
		n++
	}
	mid := cut.Add(r.ttl / 2)
	for k, e := range r.hosts {
		if e.expires.Before(mid) {
			delete(r.hosts, k)
		}
	}
}
