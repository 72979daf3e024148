package pdftext

import (
	"context"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzExtract feeds arbitrary bytes to Extract: it must return text or one
// of its errors, never panic, and finish within the page budget's bounds.
func FuzzExtract(f *testing.F) {
	seeds := []testPDF{
		{pages: []string{"BT /F1 10 Tf 72 700 Td [(Hello) -300 (world)] TJ ET"}},
		{pages: []string{textAt("F1", 10, 72, 700, "a") + textAt("F1", 10, 300, 700, "b")}, compress: true},
		{xobjects: map[string]string{"X1": textAt("F1", 10, 0, 0, "form") + "/X1 Do"}, pages: []string{"/X1 Do"}},
		{userPW: strPtr(""), pages: []string{textAt("F1", 10, 72, 700, "enc")}},
		{fonts: map[string]string{"F1": courier("/Encoding << /Differences [1 /fi /uni0041 /g12] >>")}, pages: []string{textAt("F1", 9, 72, 700, `\001\002\003`)}},
	}
	for _, s := range seeds {
		f.Add(s.bytes())
	}
	f.Add(threePages())
	f.Add([]byte("%PDF-1.7\n%%EOF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		doc, err := Extract(ctx, data, Options{MaxPages: 50})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrEncrypted) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(doc.Pages) > 50 || len(doc.Pages) > doc.NumPages {
			t.Fatalf("%d pages of %d returned with a budget of 50", len(doc.Pages), doc.NumPages)
		}
		for _, p := range doc.Pages {
			if !utf8.ValidString(p) {
				t.Fatalf("invalid UTF-8 in %q", p)
			}
		}
	})
}
