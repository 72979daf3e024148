package fetchpage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"toolhost/tools"
	"toolhost/tools/fetchpage/pdftext"
)

// extractPDF fills doc with the text of each page, a separator line before
// every page, within the page budget. Pages extracted are the paid unit.
func (t *Tool) extractPDF(ctx context.Context, inv *tools.Invocation, data []byte, doc *document) error {
	pd, err := pdftext.Extract(ctx, data, pdftext.Options{
		MaxPages: t.cfg.MaxPDFPages,
		Progress: func(done, total int) {
			inv.Progress(float64(done), float64(total), fmt.Sprintf("PDF page %d of %d", done, total))
		},
	})
	if err != nil {
		return fmt.Errorf("pdf: %w", err)
	}
	var b strings.Builder
	for i, p := range pd.Pages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "--- page %d of %d ---\n\n", i+1, pd.NumPages)
		b.WriteString(strings.TrimSpace(p))
	}
	if pd.Truncated {
		fmt.Fprintf(&b, "\n\n[page budget reached: text of the first %d of %d pages]", len(pd.Pages), pd.NumPages)
	}
	doc.Content = b.String()
	doc.Pages = pd.NumPages
	doc.Extracted = len(pd.Pages)
	doc.Truncated = pd.Truncated
	return nil
}

// pdfError maps the PDF extractor's failures to extraction_failed with a
// message that says which; nil when err is not one of them.
func pdfError(err error) *tools.Error {
	switch {
	case errors.Is(err, pdftext.ErrEncrypted):
		return tools.Errorf(CodeExtractionFailed, "the PDF is encrypted and cannot be read without its password")
	case errors.Is(err, pdftext.ErrCorrupt):
		return tools.Errorf(CodeExtractionFailed, "the PDF is damaged or not a PDF: %v", err)
	}
	return nil
}
