package fetchpage

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// fetch.max_redirects 0 follows no redirect: the fetch answers
// too_many_redirects naming where the page redirects to, and the target
// is never requested. Nil keeps the default (5), and n follows n hops and
// refuses the n+1st.
func TestFetchFollowsAtMostMaxRedirects(t *testing.T) {
	intp := func(n int) *int { return &n }
	tests := []struct {
		name    string
		max     *int
		hops    int    // redirects before the page
		code    string // "" = fetched
		message string
	}{
		{"0 follows none", intp(0), 1, CodeTooManyRedirects, "too many redirects: http://fixture.test:PORT/start redirects to http://fixture.test:PORT/hop?n=0, and this server follows no redirects (fetch.max_redirects is 0)"},
		{"0 still fetches a page that does not redirect", intp(0), 0, "", ""},
		{"1 follows one", intp(1), 1, "", ""},
		{"1 refuses the second", intp(1), 2, CodeTooManyRedirects, "too many redirects: http://fixture.test:PORT/start redirects more than 1 times"},
		{"unset follows five", nil, 5, "", ""},
		{"unset refuses the sixth", nil, 6, CodeTooManyRedirects, "too many redirects: http://fixture.test:PORT/start redirects more than 5 times"},
		{"a negative (refused by the config) takes the default", intp(-1), 5, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{IgnoreRobots: true, CacheTTL: -1, MaxRedirects: tt.max})
			var pageHits atomic.Int32
			f.mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
				if tt.hops == 0 {
					pageHits.Add(1)
					w.Header().Set("Content-Type", "text/plain")
					fmt.Fprint(w, "the page")
					return
				}
				http.Redirect(w, r, "/hop?n=0", http.StatusFound)
			})
			f.mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
				var n int
				fmt.Sscan(r.URL.Query().Get("n"), &n)
				if n+1 >= tt.hops {
					pageHits.Add(1)
					w.Header().Set("Content-Type", "text/plain")
					fmt.Fprint(w, "the page")
					return
				}
				http.Redirect(w, r, fmt.Sprintf("/hop?n=%d", n+1), http.StatusMovedPermanently)
			})
			out := f.call(map[string]any{"url": f.url("/start")})
			if tt.code == "" {
				if o := f.ok(out); o.Content != "the page" || pageHits.Load() != 1 {
					t.Fatalf("content %q after %d page hits", o.Content, pageHits.Load())
				}
				return
			}
			want := strings.ReplaceAll(tt.message, "PORT", f.port)
			if !out.IsError || out.Code != tt.code || !strings.Contains(out.Message, want) {
				t.Fatalf("got error=%v code=%q message=%q, want %s containing %q", out.IsError, out.Code, out.Message, tt.code, want)
			}
			if pageHits.Load() != 0 {
				t.Fatalf("the redirect target was fetched %d times", pageHits.Load())
			}
		})
	}
}

// A hostile redirect with a 30 KiB Location is not followed with
// max_redirects 0, and the message stays short: the target is quoted cut.
func TestFetchNoRedirectsQuotesAHugeLocationCut(t *testing.T) {
	zero := 0
	f := newFixture(t, Config{IgnoreRobots: true, MaxRedirects: &zero})
	f.mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://169.254.169.254/"+strings.Repeat("a", 30<<10))
		w.WriteHeader(http.StatusFound)
	})
	out := f.call(map[string]any{"url": f.url("/start")})
	if !out.IsError || out.Code != CodeTooManyRedirects || !strings.Contains(out.Message, "follows no redirects") {
		t.Fatalf("got error=%v code=%q message of %d bytes: %.300q…%q", out.IsError, out.Code, len(out.Message), out.Message, out.Message[max(0, len(out.Message)-300):])
	}
	if want := "redirects to http://169.254.169.254/" + strings.Repeat("a", 177) + "…, and this server follows no redirects"; !strings.Contains(out.Message, want) || len(out.Message) > 1000 {
		t.Fatalf("message of %d bytes: %.1000q", len(out.Message), out.Message)
	}
}
