package fetchpage

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestExtractHTMLKeepsSentencesOfMixedContainers(t *testing.T) {
	page, _ := url.Parse("https://example.org/2016/12/post.html")
	filler := strings.Repeat("<p>Release notes are long and the changes are many, one per line here. </p>", 6)
	cases := []struct {
		name    string
		html    string
		want    []string
		notWant []string
	}{
		{
			// Blogger: the post body is bare text, <br>s and links beside
			// <div>s. The extractor dropped the text before each link, the
			// paragraph after the first, and the link that ends a sentence.
			name: "post body of bare text and breaks",
			html: `<html><body><div class="post-body">Python 3.6.0 is now available! See <a href="https://docs.example.org/whatsnew">the What's New document</a> for more information.<br/><br/>` +
				`You can download it <a href="/downloads/">here</a>. Also, distributors will follow.<br/><div><br/></div>` +
				`Maintenance releases will follow at regular intervals.<br/><div>We hope you enjoy Python 3.6.0!</div>` + filler +
				`<div><div>Please consider supporting the work of <a href="https://psf.example.org/">the Foundation</a>.</div></div></div></body></html>`,
			want: []string{
				"Python 3.6.0 is now available! See [the What's New document](https://docs.example.org/whatsnew) for more information.",
				"You can download it [here](https://example.org/downloads/). Also, distributors will follow.",
				"Maintenance releases will follow at regular intervals.",
				"We hope you enjoy Python 3.6.0!",
				"supporting the work of [the Foundation](https://psf.example.org/).",
			},
		},
		{
			// CNN: each paragraph is a <div> of text and links; the links
			// came out as paragraphs of their own, glued to the next word.
			name: "paragraph divs with links in the sentence",
			html: `<html><body><article><div class="zn-body__paragraph">Allegations have been splashed across <a href="/media/">newspapers in the United Kingdom</a>.</div>` +
				`<div class="zn-body__paragraph"><h3>What we learned</h3></div>` + strings.ReplaceAll(filler, "<p>", `<div class="zn-body__paragraph">`) +
				`<div class="zn-body__paragraph">The pair <a href="/feb/">revealed in February that they were expecting.</a> In November, Meghan <a href="/nov/">revealed a miscarriage.</a></div>` +
				`<div class="zn-body__paragraph">Harry said that having outdoor space has been a huge benefit during the lockdowns in California.</div></article></body></html>`,
			want: []string{
				"splashed across [newspapers in the United Kingdom](https://example.org/media/).",
				"The pair [revealed in February that they were expecting.](https://example.org/feb/) In November, Meghan [revealed a miscarriage.](https://example.org/nov/)",
			},
		},
		{
			// CNN Business: once the paragraph <div>s with a link became
			// paragraphs, the extractor dropped their siblings without one
			// (links nested in spans), three paragraphs of the article.
			name: "paragraph divs with and without links",
			html: `<html><body><article>` +
				`<div class="zn-body__paragraph">The indexes were mixed after <a href="/cnbc">CNBC reported</a> that the mood in Beijing was pessimistic about the talks.</div>` +
				`<div class="zn-body__paragraph">Japan's <span>Nikkei 225</span> <span>(<span><a href="/n225">N225</a></span>)</span> declined 0.3%, while South Korea's Kospi fell 0.5% in early trading.</div>` +
				`<div class="zn-body__paragraph">Hong Kong's Hang Seng Index started in the red, but was last trading up about one percent on the day.</div>` +
				strings.ReplaceAll(filler, "<p>", `<div class="zn-body__paragraph">`) + `</article></body></html>`,
			want: []string{
				"after [CNBC reported](https://example.org/cnbc) that the mood",
				"Japan's Nikkei 225 ([N225](https://example.org/n225)) declined 0.3%",
				"Hong Kong's Hang Seng Index started in the red",
			},
		},
		{
			// WordPress: the editor puts the emphasis inside the link; the
			// extractor kept the text and dropped the target.
			name: "links whose text is all emphasis",
			html: `<html><body><article>` + filler + `<p><i><span>Want to know more? Follow them on </span></i><a href="https://github.com/erinspice"><i><span>GitHub</span></i></a>` +
				`<i><span> or </span></i><a href="https://twitter.com/erinspice"><i><span>Twitter</span></i></a><i><span>. </span></i></p>` + filler + `</article></body></html>`,
			want: []string{"[GitHub](https://github.com/erinspice)", "[Twitter](https://twitter.com/erinspice)"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			art, err := ExtractHTML([]byte(c.html), page, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(art.Markdown, w) {
					t.Errorf("markdown lacks %q:\n%s", w, art.Markdown)
				}
			}
		})
	}
}

func TestWrapParagraphsLeavesLayoutCellsAlone(t *testing.T) {
	// The cells of a comparison grid are phrasing-only <div>s without a
	// sentence or a link: made paragraphs they would pass the extractor's
	// threshold for text and come out as a column of one-word lines.
	src := `<div class="row"><div class="head">Modell</div><div class="cell">Jacke GHJ 12+18V XA</div><div class="cell">3</div></div>` +
		`<div class="post">Text of its own<br><br>and a second paragraph<div>block</div></div>`
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	wrapParagraphs(doc)
	var b bytes.Buffer
	if err := html.Render(&b, doc); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, w := range []string{
		`<div class="head">Modell</div><div class="cell">Jacke GHJ 12+18V XA</div><div class="cell">3</div>`,
		`<div class="post"><p>Text of its own</p><p>and a second paragraph</p><p>block</p></div>`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("tree lacks %s:\n%s", w, got)
		}
	}
}

func TestDropRepeatedBlocksKeepsOneCopy(t *testing.T) {
	long := strings.Repeat("Pepe sleeps on the window bench and leaves crumbs every night. ", 7)
	meal := "Asian Chicken Zoodles [1 cup zucchini noodles (sauteed using nonstick spray), 4 oz. cooked chicken, half a cup edamame, 1 tsp. sesame oil, 1 tsp. soy sauce]"
	src := `<div><p>` + long + `</p><h2>Thursday</h2><p>` + long + `</p><p>Repeat Chorus</p><p>Repeat Chorus</p><p>` + meal + `</p><p>` + meal + `</p></div>`
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	dropRepeatedBlocks(doc)
	var b bytes.Buffer
	if err := html.Render(&b, doc); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if n := strings.Count(got, long); n != 1 {
		t.Errorf("the long paragraph appears %d times, want once:\n%s", n, got)
	}
	if !strings.Contains(got, "<h2>Thursday</h2><p>"+long) {
		t.Errorf("the copy under the heading should stay:\n%s", got)
	}
	if n := strings.Count(got, "Repeat Chorus"); n != 2 {
		t.Errorf("short repeated lines are content; got %d, want 2", n)
	}
	if n := strings.Count(got, meal); n != 2 {
		t.Errorf("a meal plan's repeated lines are content; got %d, want 2", n)
	}
}

func TestMarkdownWritesAnglesAsCharacters(t *testing.T) {
	// Stack Exchange: "Ich wurde ausgeraubt -> I got robbed" came out as
	// "-&gt;"; FIFA's "CUSTOMISE > GAME SETTINGS" as "&gt;".
	cases := []struct{ html, want, notWant string }{
		{`<p>Ich wurde ausgeraubt -&gt; I got robbed.</p>`, `Ich wurde ausgeraubt -> I got robbed.`, "&gt;"},
		{`<p>Go to CUSTOMISE &gt; GAME SETTINGS when x &lt; 3.</p>`, `Go to CUSTOMISE > GAME SETTINGS when x < 3.`, "&"},
		// A "<" that would open a tag stays an entity, so a renderer shows
		// it instead of swallowing "<your name>" as an element.
		{`<p>She says "Oh, &lt;your name&gt;."</p>`, `"Oh, &lt;your name>."`, ""},
		// A ">" starting a line would make a quote.
		{`<p>&gt; not a quote</p>`, `\> not a quote`, ""},
		{`<blockquote><p>a real quote</p></blockquote>`, `> a real quote`, ""},
		{`<pre><code>if a &gt; b &amp;&amp; c &lt; d {}</code></pre>`, "if a > b && c < d {}", "\uE003"},
	}
	for _, c := range cases {
		doc, err := html.Parse(strings.NewReader(c.html))
		if err != nil {
			t.Fatal(err)
		}
		md, err := markdownConverter.ConvertNode(doc)
		if err != nil {
			t.Fatal(err)
		}
		got := restoreAngles(string(md))
		if !strings.Contains(got, c.want) || (c.notWant != "" && strings.Contains(got, c.notWant)) {
			t.Errorf("%s\n got %q\nwant %q", c.html, got, c.want)
		}
	}
}

func TestExtractHTMLKeepsSpacesAroundInlineElements(t *testing.T) {
	// In list items the extractor drops the whitespace around inline
	// elements: "`requirements.txt`with`pip-tools`", "[my referral
	// link](…)and", "**Stable**channel".
	page, _ := url.Parse("https://example.org/articles/docker/")
	filler := strings.Repeat("<p>Docker builds can be slow, and waiting for a build is not how you want to spend time. </p>", 4)
	src := `<html><body><article>` + filler + `<ul>
<li>Managing your <code>requirements.txt</code> with <code>pip-tools</code>.</li>
<li>Separate dependencies (using <code>pip-tools</code>, <code>pipenv</code>, or <code>poetry</code>).</li>
<li>For bonus points, use <a href="https://example.org/ref">my referral link</a> and we both get credit.</li>
<li>The <strong>Stable</strong> channel is updated.</li>
<li>Glued in the page: <code>a</code>b and x<strong>y</strong>.</li>
</ul>` + filler + `</article></body></html>`
	art, err := ExtractHTML([]byte(src), page, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"Managing your `requirements.txt` with `pip-tools`.",
		"(using `pip-tools`, `pipenv`, or `poetry`)",
		"use [my referral link](https://example.org/ref) and we both",
		"The **Stable** channel",
		// What the page glues stays glued.
		"`a`b and x**y**.",
	} {
		if !strings.Contains(art.Markdown, w) {
			t.Errorf("markdown lacks %q:\n%s", w, art.Markdown)
		}
	}
}

func TestTableCellsKeepTheirIconsAltText(t *testing.T) {
	// docs.docker.com marks supported platforms with <img alt="yes">: the
	// rows came out with every cell but the first empty. A photo's long
	// description and a file name are not a cell's word.
	page, _ := url.Parse("https://docs.example.org/install/")
	filler := strings.Repeat("<p>Docker Engine is available on a variety of Linux platforms, macOS and Windows. </p>", 4)
	src := `<html><body><article>` + filler + `<table><thead><tr><th>Platform</th><th>x86_64</th><th>arm64</th><th>s390x</th></tr></thead><tbody>
<tr><td><a href="/centos/">CentOS</a></td><td><a href="/centos/"><img src="/check.svg" alt="yes"></a></td><td><img src="/check.svg" alt="yes"></td><td> </td></tr>
<tr><td><a href="/sles/">SLES</a></td><td> </td><td><img src="/p.jpg" alt="A penguin standing on an ice floe at dusk"></td><td><img src="/x.png" alt="Green_check.png"></td></tr>
</tbody></table>` + filler + `</article></body></html>`
	art, err := ExtractHTML([]byte(src), page, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"| [CentOS](https://docs.example.org/centos/) | [yes](https://docs.example.org/centos/) | yes",
	} {
		if !strings.Contains(art.Markdown, w) {
			t.Errorf("markdown lacks %q:\n%s", w, art.Markdown)
		}
	}
	for _, w := range []string{"penguin", "Green_check"} {
		if strings.Contains(art.Markdown, w) {
			t.Errorf("markdown has %q:\n%s", w, art.Markdown)
		}
	}
}

func TestTablesWithListsInCellsStayTables(t *testing.T) {
	// A wiki's gift table has "All Universal Loves" as a list in one
	// row; the converter refused the table and its rows came out as
	// loose lines. Items with their own bullet get no second one.
	src := `<table><tr><th>Name</th><th>Notes</th></tr>
<tr><td colspan="2"><ul><li><b>All Universal Loves</b></li></ul></td></tr>
<tr><td>Diamond</td><td><ul><li>Mining</li><li>Gem <i>Node</i></li></ul></td></tr>
<tr><td>2008</td><td><ul><li>▪ 2008-03 香港</li><li>▪ 2008-7 台湾</li></ul></td></tr>
<tr><td><h4>Ball</h4><p>Which ball is used.</p></td><td>Friends:<br><br><br>Maru</td></tr></table>`
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	flattenCellBlocks(doc)
	md, err := markdownConverter.ConvertNode(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := brRun.ReplaceAllString(string(md), "<br>")
	for _, w := range []string{
		"| **All Universal Loves** |",
		"| Diamond | • Mining<br>• Gem *Node* |",
		"| 2008 | ▪ 2008-03 香港<br>▪ 2008-7 台湾 |",
		"| **Ball**<br>Which ball is used. | Friends:<br>Maru |",
	} {
		if !strings.Contains(strings.Join(strings.Fields(got), " "), w) {
			t.Errorf("markdown lacks %q:\n%s", w, got)
		}
	}
}

func TestPreAroundTablesIsNotCode(t *testing.T) {
	// An old results page lays its tables out inside one <pre>; as code
	// every table came out as one line in a fence.
	page, _ := url.Parse("https://results.example.org/2007/")
	rows := strings.Repeat(`<table><tr><td>1.</td><td>DJK Ellwangen</td><td>53,09</td><td>sec.</td></tr></table> `, 12)
	src := `<html><body><h3>Regionalmeisterschaften</h3><p>` + strings.Repeat("Ergebnisse der Regionalmeisterschaften der Schülerinnen. ", 6) +
		`</p><pre><span><h3>Schülerinnen A</h3> ` + rows + `</span></pre><pre>for i in range(3):
    print(i)</pre></body></html>`
	art, err := ExtractHTML([]byte(src), page, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(art.Markdown, "| 1\\. | DJK Ellwangen | 53,09 | sec. |") {
		t.Errorf("the results are not a table:\n%s", art.Markdown)
	}
	if !strings.Contains(art.Markdown, "```\nfor i in range(3):\n    print(i)\n```") {
		t.Errorf("real code lost its fence:\n%s", art.Markdown)
	}
}

func TestTableWithBlocksInCellsIsRestoredWhole(t *testing.T) {
	// FIFA's settings tables: a heading and a paragraph in the first cell,
	// a list of values in the second. The extractor dropped the lists, and
	// its copy of the first cell ("BallWhich…", the blocks joined) did not
	// match the page's, so the page's table was not put back.
	page, _ := url.Parse("https://www.example.org/fifa-21/settings")
	row := func(name, desc string, values ...string) string {
		return `<tr><td>
<h5>` + name + `</h5>
<p>` + desc + `</p>
</td><td><ul><li>` + strings.Join(values, "</li><li>") + `</li></ul></td></tr>`
	}
	src := `<html><body><article><p>` + strings.Repeat("You are able to customise and adjust the settings in FIFA 21. ", 6) + `</p>
<table class="table"><thead><tr><th>Option</th><th>Value</th></tr></thead><tbody>` +
		row("Half Length", "Choose how many minutes you want each half to last.", "4 minutes", "5 minutes") +
		row("Difficulty Level", "Based on your skill, set the difficulty level of your opponent.", "Beginner", "Amateur") +
		row("Ball", "Determine which match ball will be used during the match.", "Adidas", "Nike") +
		`</tbody></table><p>` + strings.Repeat("Here is the complete list of the game settings. ", 6) + `</p></article></body></html>`
	art, err := ExtractHTML([]byte(src), page, true)
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(art.Markdown), " ")
	for _, w := range []string{
		"| **Half Length**<br>Choose how many minutes you want each half to last. | • 4 minutes<br>• 5 minutes |",
		"| **Ball**<br>Determine which match ball will be used during the match. | • Adidas<br>• Nike |",
	} {
		if !strings.Contains(flat, w) {
			t.Errorf("markdown lacks %q:\n%s", w, art.Markdown)
		}
	}
}
