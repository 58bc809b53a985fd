package ingest

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/ledongthuc/pdf"
)

// checkPage reads the streams the text reader will interpret — the page's
// content and its fonts' ToUnicode maps — decoded, within
// MaxUnzippedBytes (a PDF stream can be a deflate bomb too), and refuses
// a stream that ends inside a hex string: ledongthuc/pdf's lexer loops
// forever there (it reads end of stream as endless white space), a hang
// the fuzz target found. Any other malformation makes it panic, which
// guard catches.
func checkPage(p pdf.Page, lim Limits) *FileError {
	streams := []pdf.Value{p.V.Key("Contents")}
	for _, f := range p.Fonts() {
		streams = append(streams, p.Font(f).V.Key("ToUnicode"))
	}
	budget := lim.MaxUnzippedBytes
	for _, v := range streams {
		var parts []pdf.Value
		switch v.Kind() {
		case pdf.Stream:
			parts = []pdf.Value{v}
		case pdf.Array:
			for i := 0; i < v.Len(); i++ {
				parts = append(parts, v.Index(i))
			}
		}
		var data []byte
		for _, part := range parts {
			if part.Kind() != pdf.Stream {
				continue
			}
			rc := part.Reader()
			b, err := io.ReadAll(io.LimitReader(rc, budget+1))
			_ = rc.Close()
			if err != nil {
				return &FileError{Format: FormatPDF, Kind: ErrCorrupt, Reason: "unreadable stream: " + err.Error(), Err: err}
			}
			budget -= int64(len(b))
			if budget < 0 {
				return &FileError{Format: FormatPDF, Kind: ErrTooLarge, Reason: fmt.Sprintf("streams decompress to more than %d bytes", lim.MaxUnzippedBytes)}
			}
			data = append(data, b...)
		}
		if openHexString(data) {
			return &FileError{Format: FormatPDF, Kind: ErrCorrupt, Reason: "a content stream ends inside a hex string"}
		}
	}
	return nil
}

// openHexString lexes a content stream as ledongthuc/pdf does (comments,
// literal strings with escapes and nesting, "<<" dictionaries) and
// reports whether it ends inside a "<…" hex string — the one input its
// lexer never returns from.
func openHexString(data []byte) bool {
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '%':
			for i < len(data) && data[i] != '\r' && data[i] != '\n' {
				i++
			}
		case '(':
			depth := 0
		lit:
			for ; i < len(data); i++ {
				switch data[i] {
				case '\\':
					i++
				case '(':
					depth++
				case ')':
					if depth--; depth == 0 {
						break lit
					}
				}
			}
		case '<':
			if i+1 < len(data) && data[i+1] == '<' {
				i++
				continue
			}
			// Pairs of bytes, white space skipped, until '>' comes where a
			// pair starts; end of data anywhere before is the hang, and a
			// pair that is not hex makes the reader panic (caught).
			j := i + 1
			next := func() (byte, bool) { // the next byte that is not white space
				for j < len(data) && pdfSpace(data[j]) {
					j++
				}
				if j == len(data) {
					return 0, false
				}
				j++
				return data[j-1], true
			}
			for {
				c, ok := next()
				if !ok {
					return true
				}
				if c == '>' {
					break
				}
				c2, ok := next()
				if !ok {
					return true
				}
				if !isHex(c) || !isHex(c2) {
					return false
				}
			}
			i = j - 1
		}
	}
	return false
}

func pdfSpace(c byte) bool {
	return c == 0 || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

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
		if err := checkPage(p, lim); err != nil {
			err.File, err.Reason = name, fmt.Sprintf("page %d: %s", i, err.Reason)
			return Extracted{}, err
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
