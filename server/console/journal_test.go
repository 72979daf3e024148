package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/console"
)

var (
	rowRE  = regexp.MustCompile(`href="/console/executions/([^"?]+)`)
	nextRE = regexp.MustCompile(`<a rel="next" href="([^"]+)"`)
	prevRE = regexp.MustCompile(`<a rel="prev" href="([^"]+)"`)
)

func link(re *regexp.Regexp, page string) string {
	if m := re.FindStringSubmatch(page); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// TestExecutionsPageByCursorKeepsFilters: Older walks the whole journal
// by cursor, each record once, keeping the filters; Newer comes back; a
// changed cursor, or one taken to another account, is a 400 that shows
// nothing.
func TestExecutionsPageByCursorKeepsFilters(t *testing.T) {
	f := newFixture(t, console.Options{})
	var want []string
	for i := range 7 {
		id, _ := f.call(t, "acme", "/notes/"+string(rune('a'+i)))
		want = append(want, id)
	}
	f.call(t, "globex", "/notes/secret")
	acme := f.signIn(t, "acme")
	first := "/console/executions?tool_name=delete_note&limit=3"
	var pages [][]string
	var links []string
	for u := first; u != ""; {
		resp, page := acme.get(u)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", u, resp.StatusCode)
		}
		var ids []string
		for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
			ids = append(ids, m[1])
		}
		pages, links = append(pages, ids), append(links, u)
		u = link(nextRE, page)
		if u != "" && (!strings.Contains(u, "tool_name=delete_note") || !strings.Contains(u, "limit=3") || !strings.Contains(u, "cursor=")) {
			t.Errorf("Older link dropped the filters: %s", u)
		}
		if len(pages) > 10 {
			t.Fatal("the pages do not end")
		}
	}
	var seen []string
	for _, p := range pages {
		seen = append(seen, p...)
	}
	slices.Reverse(want) // newest first
	if !slices.Equal(seen, want) {
		t.Errorf("pages %v, want %v", pages, want)
	}
	_, second := acme.get(links[1])
	if back := link(prevRE, second); back == "" {
		t.Error("the second page has no Newer link")
	} else if _, page := acme.get(back); link(nextRE, page) == "" || !strings.Contains(page, pages[0][0]) {
		t.Errorf("Newer from the second page is not the first: %s", back)
	}

	cursor := mustURL(t, links[1]).Query().Get("cursor")
	if len(cursor) < 10 {
		t.Fatalf("no cursor in %s", links[1])
	}
	globex := f.signIn(t, "globex")
	for name, tc := range map[string]struct {
		b *browser
		u string
	}{
		"changed":         {acme, "/console/executions?tool_name=delete_note&limit=3&cursor=" + url.QueryEscape(cursor[:len(cursor)-2]+"AA")},
		"other filters":   {acme, "/console/executions?limit=3&cursor=" + url.QueryEscape(cursor)},
		"another account": {globex, "/console/executions?tool_name=delete_note&limit=3&cursor=" + url.QueryEscape(cursor)},
		"markup":          {acme, "/console/executions?cursor=" + url.QueryEscape(`<script>alert(1)</script>`)},
		"huge":            {acme, "/console/executions?cursor=" + strings.Repeat("A", 5000)},
	} {
		resp, page := tc.b.get(tc.u)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "first page") {
			t.Errorf("%s: %d", name, resp.StatusCode)
		}
		if ids := rowRE.FindAllString(page, -1); len(ids) > 0 || strings.Contains(page, "<script>alert") {
			t.Errorf("%s: a refused cursor still shows %v", name, ids)
		}
	}
}

// TestAdminSeesEveryAccountsApprovals: an admin names another account on
// the approvals page and decides its approval there; an account key
// naming another account is refused by the REST route itself, page and
// forged post alike.
func TestAdminSeesEveryAccountsApprovals(t *testing.T) {
	f := newFixture(t, console.Options{})
	_, apr := f.call(t, "globex", "<b>globex's note</b>")
	acme := f.signIn(t, "acme")
	if _, page := acme.get("/console/approvals"); strings.Contains(page, apr) {
		t.Fatal("acme sees globex's approval")
	}
	resp, page := acme.get("/console/approvals?account=globex")
	if resp.StatusCode != http.StatusForbidden || strings.Contains(page, apr) || !strings.Contains(page, "insufficient_scope") {
		t.Errorf("acme naming globex: %d, approval shown %v", resp.StatusCode, strings.Contains(page, apr))
	}
	_, own := acme.get("/console/approvals")
	forged := acme.post("/console/approvals/"+apr, url.Values{"csrf": {csrfOf(t, own)}, "action": {"approve"}, "account": {"globex"}}, nil)
	if forged.StatusCode != http.StatusForbidden {
		t.Errorf("acme's forged approve of globex's approval: %d", forged.StatusCode)
	}

	admin := f.signIn(t, "admin")
	resp, page = admin.get("/console/approvals?account=globex")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, apr) || !strings.Contains(page, "&lt;b&gt;globex") {
		t.Fatalf("admin on globex's approvals: %d\n%s", resp.StatusCode, page)
	}
	if !strings.Contains(page, `name="account" value="globex"`) {
		t.Error("the approve form does not carry the account")
	}
	ok := admin.post("/console/approvals/"+apr, url.Values{"csrf": {csrfOf(t, page)}, "action": {"approve"}, "account": {"globex"}}, nil)
	if ok.StatusCode != http.StatusOK {
		t.Fatalf("admin approving globex's approval: %d", ok.StatusCode)
	}
	if _, page := admin.get("/console/approvals?account=globex"); strings.Contains(page, `id="approval-`+apr) {
		t.Error("the approval is still pending after the admin approved it")
	}
}
