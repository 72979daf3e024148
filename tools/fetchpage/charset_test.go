package fetchpage

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

const (
	germanText   = "Präteritum: Er schlief, sie aß, wir fuhren über die Brücke. Größere Häuser stehen dort drüben, schöne Grüße aus Köln und München, Übung macht den Meister."
	englishQuote = "The rocket’s red glare — “quoted” and naïve café."
	japaneseText = "日本語のテキストです。これは文字コードの判定を試すための長めの文章で、ひらがなとカタカナと漢字が混ざっています。東京都の天気は晴れです。"
	russianText  = "Съешь же ещё этих мягких французских булок, да выпей чаю. Широкая электрификация южных губерний даст мощный толчок подъёму сельского хозяйства."
)

// padding pushes a <meta charset> past the 1024 bytes a browser prescans,
// the way real pages do with inline scripts and styles.
var padding = "<script>var config = {" + strings.Repeat(`"k": "some configuration value", `, 60) + "};</script>\n"

func TestCharsetDecisions(t *testing.T) {
	w1252 := func(s string) string {
		b, err := charmap.Windows1252.NewEncoder().String(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	w1251 := func(s string) string {
		b, err := charmap.Windows1251.NewEncoder().String(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sjis, err := japanese.ShiftJIS.NewEncoder().String(japaneseText)
	if err != nil {
		t.Fatal(err)
	}
	utf16le, err := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String("<p>" + germanText + "</p>")
	if err != nil {
		t.Fatal(err)
	}
	page := func(head, body string) string {
		return "<!doctype html><html><head>" + head + "<title>t</title></head><body><p>" + body + "</p></body></html>"
	}
	cases := []struct {
		name, ctype, body string
		html              bool
		want              string // WHATWG name chosen
		source            string
		text              string // must appear in the decoded body
	}{
		{"utf8 BOM beats header", "text/html; charset=windows-1252", "\xef\xbb\xbf" + page("", germanText), true, "utf-8", "bom", germanText},
		{"utf16 BOM", "text/html", utf16le, true, "utf-16le", "bom", germanText},
		{"header declares latin", "text/html; charset=windows-1252", page("", w1252(germanText)), true, "windows-1252", "header", germanText},
		{"header beats meta", "text/html; charset=windows-1251", page(`<meta charset="utf-8">`, w1251(russianText)), true, "windows-1251", "header", russianText},
		{"meta early", "text/html", page(`<meta charset="windows-1251">`, w1251(russianText)), true, "windows-1251", "meta", russianText},
		{"meta after 1024 bytes", "text/html", page(padding+`<meta charset="windows-1251">`, w1251(russianText)), true, "windows-1251", "meta", russianText},
		{"http-equiv after 1024 bytes", "text/html", page(padding+`<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">`, sjis), true, "shift_jis", "meta", japaneseText},
		{"utf-8 meta after 1024 bytes", "text/html", page(padding+`<meta charset="utf-8">`, englishQuote), true, "utf-8", "meta", englishQuote},
		{"meta in a comment ignored", "text/html", page(`<!-- <meta charset="windows-1251"> -->`, englishQuote), true, "utf-8", "utf8", englishQuote},
		{"meta in a script ignored", "text/html", page(`<script>document.write('<meta charset="windows-1251">')</script>`, englishQuote), true, "utf-8", "utf8", englishQuote},
		{"undeclared valid utf-8", "text/html", page("", englishQuote+" "+germanText), true, "utf-8", "utf8", englishQuote},
		{"undeclared shift_jis", "text/html", page("", sjis), true, "shift_jis", "detector", japaneseText},
		{"undeclared windows-1251", "text/html", page("", w1251(russianText)), true, "windows-1251", "detector", russianText},
		{"undeclared latin", "text/html", page("", w1252(germanText)), true, "windows-1252", "detector", germanText},
		{"header latin on utf-8 body", "text/html; charset=ISO-8859-1", page("", germanText), true, "utf-8", "header-mislabelled", germanText},
		{"meta latin on utf-8 body", "text/html", page(`<meta charset="iso-8859-1">`, englishQuote), true, "utf-8", "meta-mislabelled", englishQuote},
		{"meta utf-8 on latin body", "text/html", page(`<meta charset="utf-8">`, w1252(germanText)), true, "windows-1252", "meta-mislabelled", germanText},
		{"unknown label is no label", "text/html; charset=x-klingon", page("", germanText), true, "utf-8", "utf8", germanText},
		{"plain text undeclared", "text/plain", germanText, false, "utf-8", "utf8", germanText},
		{"plain text ignores meta", "text/plain", `<meta charset="windows-1251">` + englishQuote, false, "utf-8", "utf8", englishQuote},
		{"ascii stays itself", "text/html; charset=us-ascii", page("", "plain words"), true, "windows-1252", "header", "plain words"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, dec, err := decodeCharset([]byte(c.body), c.ctype, c.html)
			if err != nil {
				t.Fatal(err)
			}
			if dec.Name != c.want || dec.Source != c.source {
				t.Errorf("chose %s from %s, want %s from %s", dec.Name, dec.Source, c.want, c.source)
			}
			if !strings.Contains(string(out), c.text) {
				t.Errorf("decoded body lacks %q:\n%.300s", c.text, out)
			}
		})
	}
}

// TestFetchDecodesUndeclaredUTF8 is the benchmark failure the issue names:
// a UTF-8 page served as bare text/html whose <meta charset> comes after
// the first 1024 bytes, or that has none, must not come out as
// "rocketâ€™s" or "PrÃ¤teritum".
func TestFetchDecodesUndeclaredUTF8(t *testing.T) {
	article := "<article><h1>Launch day</h1><p>" + englishQuote + "</p><p>" + germanText + "</p><p>" +
		strings.Repeat("The launch went ahead after the weather cleared in the afternoon. ", 6) + "</p></article>"
	pages := map[string]string{
		"/late-meta": "<!doctype html><html><head>" + padding + `<meta charset="utf-8"><title>Launch</title></head><body>` + article + "</body></html>",
		"/no-meta":   "<!doctype html><html><head><title>Launch</title></head><body>" + article + "</body></html>",
	}
	f := newFixture(t, Config{})
	for path, body := range pages {
		f.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, body)
		})
	}
	for path := range pages {
		for _, format := range []string{"text", "markdown", "html"} {
			o := f.ok(f.call(map[string]any{"url": f.url(path), "format": format}))
			for _, want := range []string{"rocket’s", "Präteritum", "Größere Häuser"} {
				if !strings.Contains(o.Content, want) {
					t.Errorf("%s as %s lacks %q:\n%.400s", path, format, want, o.Content)
				}
			}
			if strings.Contains(o.Content, "â€") || strings.Contains(o.Content, "Ã") {
				t.Errorf("%s as %s is mojibake:\n%.400s", path, format, o.Content)
			}
		}
	}
}

func TestCharsetFromContent(t *testing.T) {
	for in, want := range map[string]string{
		"text/html; charset=utf-8":        "utf-8",
		"text/html;charset='koi8-r'":      "koi8-r",
		`text/html; charset = "gbk"`:      "gbk",
		"text/html; CHARSET=Shift_JIS; x": "Shift_JIS",
		"text/html":                       "",
		"text/html; charset=":             "",
		`text/html; charset="unclosed`:    "",
	} {
		if got := charsetFromContent(in); got != want {
			t.Errorf("charsetFromContent(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzDecodeCharset(f *testing.F) {
	f.Add([]byte("<meta charset=utf-8><p>x</p>"), "text/html")
	f.Add([]byte("\xff\xfe<\x00p\x00>\x00"), "text/html; charset=utf-16")
	f.Add([]byte("<meta http-equiv=content-type content='text/html;charset=\"sjis'>\x82\xa0"), "")
	f.Fuzz(func(t *testing.T, body []byte, ctype string) {
		out, dec, err := decodeCharset(body, ctype, true)
		if err != nil {
			return
		}
		if dec.Name == "" || dec.Source == "" {
			t.Fatalf("no decision for %q", body)
		}
		if !utf8.Valid(out) {
			t.Fatalf("output is not valid UTF-8")
		}
	})
}
