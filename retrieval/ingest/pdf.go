package ingest

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ledongthuc/pdf"
)

// extractPDF reads a PDF's text page by page; each page is a section with
// metadata "page" (1-based), and the document gets "pages".
//
// The reader is github.com/ledongthuc/pdf: pure Go, no cgo, about a
// millisecond for a small file. go-pdfium's WebAssembly build was
// measured too: it reads more PDFs (it is Chrome's PDF engine) but its
// runtime takes about 8 s to compile on this project's 2-core machines
// before the first page and adds some 15 MB to the binary; that trade is
// wrong for a default. ledongthuc/pdf panics on some malformed files,
// which guard turns into ErrCorrupt. It reads no encrypted PDF and no
// scanned page (no text layer): those are clear per-file problems.
func extractPDF(name string, data []byte, lim Limits) (Extracted, error) {
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		reason := "not a readable PDF: " + err.Error()
		if strings.Contains(err.Error(), "encrypt") || strings.Contains(err.Error(), "password") {
			reason = "an encrypted PDF: remove the password first"
		}
		return Extracted{}, &FileError{File: name, Format: FormatPDF, Kind: ErrCorrupt, Reason: reason, Err: err}
	}
	n := r.NumPage()
	if n > lim.MaxPages {
		return Extracted{}, fileErr(name, FormatPDF, ErrTooLarge, "%d pages, over the limit of %d", n, lim.MaxPages)
	}
	ex := Extracted{Metadata: map[string]any{"pages": n}}
	for i := 1; i <= n; i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		text, err := p.GetPlainText(nil) // fonts are per page: no cache across pages
		if err != nil {
			return Extracted{}, &FileError{File: name, Format: FormatPDF, Kind: ErrCorrupt, Reason: fmt.Sprintf("page %d: %v", i, err), Err: err}
		}
		text = strings.ToValidUTF8(text, "\uFFFD")
		if strings.TrimSpace(text) == "" {
			continue
		}
		ex.Sections = append(ex.Sections, Section{Text: text, Metadata: map[string]any{"page": i}})
	}
	return ex, nil
}
