package fetchpage

import (
	"net/url"
	"strings"
	"testing"
)

var lorem = strings.Repeat("The burrow system of the pocket gopher stretches for hundreds of metres under the meadow, with feeding tunnels near the surface and nesting chambers deeper down. ", 3)

// TestFurnitureLeavesTheArticle checks each failure class the issue names
// on a page built around it: the furniture goes, the article stays whole.
func TestFurnitureLeavesTheArticle(t *testing.T) {
	cases := []struct {
		name       string
		head, tail string // HTML inside the article, before and after the text
		page       string // whole-page HTML around the article, when set
		gone       []string
		kept       []string
	}{
		{
			name: "headline, standfirst, byline and share bar",
			head: `<div class="headline-group"><h1>Gophers dig deeper</h1><p class="dek">Why the meadow is hollow.</p></div><p>By Ann Author · Nov. 20, 2019</p><div class="share-bar"><a href="#">Whatsapp</a> <a href="#">Facebook</a> <a href="#">Pint</a></div>`,
			gone: []string{"Why the meadow is hollow.", "Whatsapp", "Ann Author"},
		},
		{
			name: "newsletter, follow us, tags and related teasers",
			tail: `<p>Get the latest updates right in your inbox. Subscribe to our newsletters.</p><p>Follow us on Twitter @gophers.</p>
<p>Tags</p><p>gophers, burrows, meadows, tunnels, soil</p>
<h3>You may also like</h3><p><a href="/a">Moles are not gophers</a></p><p>A short piece about moles.</p><p><a href="/b">Voles in winter</a></p><p>Where voles go when it snows.</p>`,
			gone: []string{"Subscribe to our newsletters", "Follow us on Twitter", "gophers, burrows, meadows", "Moles are not gophers", "Where voles go", "You may also like"},
		},
		{
			// Baidu Baike's toggle under its reference list.
			name: "a collapse toggle",
			tail: `<p>收起</p>`,
			gone: []string{"收起"},
		},
		{
			name: "comments are closed",
			tail: `<p>Comments are closed.</p>`,
			gone: []string{"Comments are closed"},
		},
		{
			name: "a table naming social networks keeps every cell",
			tail: `<table><tr><th>Network</th><th>Handle</th></tr><tr><td><a href="/t">Twitter</a></td><td>twitter</td></tr><tr><td>Facebook</td><td>@gopher</td></tr></table>`,
			kept: []string{"Twitter", "twitter", "@gopher", "Facebook"},
		},
		{
			name: "reading time above the text",
			head: `<p><em>Estimated reading time: 6 minutes</em></p><span class="time">5 min</span>`,
			gone: []string{"reading time", "5 min"},
		},
		{
			name: "a consent overlay is not the article",
			page: `<div id="cookie-consent" class="overlay"><p>We use cookies to give you the best experience. By clicking accept you agree to the use of cookies for analytics, personalised content and ads, as described in our cookie policy and our privacy notice, which you can read at any time.</p><button>Accept</button></div>`,
			gone: []string{"We use cookies"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page := `<html><head><title>Gophers dig deeper | Burrow Weekly</title><meta name="description" content="Why the meadow is hollow."><meta name="author" content="Ann Author"></head><body>` +
				`<nav><a href="/">Home</a> <a href="/news">News</a></nav>` + c.page +
				`<article>` + c.head + `<p>` + lorem + `</p><p>` + lorem + `</p>` + c.tail + `</article><footer>© Burrow Weekly</footer></body></html>`
			u, _ := url.Parse("https://example.org/gophers")
			for _, md := range []bool{false, true} {
				art, err := ExtractHTML([]byte(page), u, md)
				if err != nil {
					t.Fatal(err)
				}
				out := art.Text
				if md {
					out = art.Markdown
				}
				if !strings.Contains(out, "nesting chambers deeper down") {
					t.Errorf("markdown=%v: the article is gone:\n%s", md, out)
				}
				for _, g := range c.gone {
					if strings.Contains(out, g) {
						t.Errorf("markdown=%v: %q kept:\n%s", md, g, out)
					}
				}
				for _, k := range c.kept {
					if !strings.Contains(out, k) {
						t.Errorf("markdown=%v: %q lost:\n%s", md, k, out)
					}
				}
			}
		})
	}
}

func TestMarkedAsFurniture(t *testing.T) {
	for in, want := range map[string]bool{
		"related-posts":       true,
		"social_share":        true,
		"author-bio":          true,
		"post-tags":           true,
		"sharedaddy sd-block": true,
		"breadcrumb":          true,
		"tag-minnesota-wild category-sports post type-post": false,
		"article-body": false,
		"biography":    false,
		"content main": false,
	} {
		if got := markedAsFurniture(in); got != want {
			t.Errorf("markedAsFurniture(%q) = %v, want %v", in, got, want)
		}
	}
}
