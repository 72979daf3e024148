package fetchpage

import (
	"net/url"
	"strings"
	"testing"
)

func TestMediaWikiDropsPlainTableNavboxes(t *testing.T) {
	// Fandom and the Stardew Valley wiki build their navigation boxes as
	// plain tables of links separated by middle dots, without the navbox
	// class; they ended the Markdown with a wall of links. A data table
	// whose cells are links stays.
	var nav strings.Builder
	nav.WriteString(`<table class="toccolours"><tr><th><a href="/wiki/Villagers">Villagers</a></th></tr><tr><td>Bachelors</td><td>`)
	for i, n := range []string{"Alex", "Elliott", "Harvey", "Sam", "Sebastian", "Shane", "Abigail", "Emily", "Haley", "Leah", "Maru", "Penny"} {
		if i > 0 {
			nav.WriteString(" • ")
		}
		nav.WriteString(`<a href="/wiki/` + n + `">` + n + `</a>`)
	}
	nav.WriteString(`</td></tr></table>`)
	page := `<html><body><div id="mw-content-text"><div class="mw-parser-output">` +
		`<aside class="infobox"><p>Conjures water</p><a href="/wiki/Template:Spell_infobox">[Source]</a></aside>` +
		`<p>` + lorem + `</p>` +
		`<table class="wikitable"><tr><th>Caster</th><th>Date</th></tr><tr><td><a href="/wiki/Fleur">Fleur Delacour</a></td><td><a href="/wiki/1994">1994</a></td></tr>` +
		`<tr><td><a href="/wiki/Harry">Harry Potter</a></td><td><a href="/wiki/1997">1997</a></td></tr></table>` +
		nav.String() + `</div></div></body></html>`
	u, _ := url.Parse("https://wiki.example.org/wiki/Spell")
	art, err := ExtractHTML([]byte(page), u, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"[Fleur Delacour](https://wiki.example.org/wiki/Fleur)", "Harry Potter", "Conjures water"} {
		if !strings.Contains(art.Markdown, w) {
			t.Errorf("markdown lacks %q:\n%s", w, art.Markdown)
		}
	}
	for _, w := range []string{"Bachelors", "Sebastian", "[Source]", "Template:"} {
		if strings.Contains(art.Markdown, w) {
			t.Errorf("markdown keeps %q:\n%s", w, art.Markdown)
		}
	}
}
