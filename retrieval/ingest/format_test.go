package ingest_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/ingest"
	"github.com/agentbus/agentbus/retrieval/ingest/ingesttest"
)

// Fixtures shared by the format tests, benchmarks and fuzz seeds.
func pdfFixture() []byte {
	return ingesttest.PDF(
		"Annual report\nThe harbour crane lifted 4,210 containers in March.",
		"Page two covers staffing.\nThe night shift grew to 31 dockers.",
		"Page three: the secret pass phrase is copper-lantern-77.",
	)
}

func docxFixture() []byte {
	return ingesttest.DOCX("Field manual",
		ingesttest.Para{Style: "Title", Text: "Field manual"},
		ingesttest.Para{Text: "Read this before every survey."},
		ingesttest.Para{Style: "Heading1", Text: "Equipment"},
		ingesttest.Para{Text: "Pack the theodolite in its orange case."},
		ingesttest.Para{Style: "Heading2", Text: "Batteries"},
		ingesttest.Para{Text: "Spare batteries live in drawer nine."},
	)
}

func xlsxFixture(rows int) []byte {
	inv := ingesttest.Sheet{Name: "Inventory", Rows: [][]any{{"sku", "item", "stock"}}}
	for i := 1; i <= rows; i++ {
		inv.Rows = append(inv.Rows, []any{fmt.Sprintf("SKU-%04d", i), fmt.Sprintf("widget model %d", i), i * 3})
	}
	staff := ingesttest.Sheet{Name: "Staff", Rows: [][]any{{"name", "role"}, {"Ada", "engineer"}, {"Grace", "admiral"}}}
	return ingesttest.XLSX(inv, staff)
}

func htmlFixture() []byte {
	return ingesttest.HTML("Tide tables explained",
		[2]string{"Spring tides", "Spring tides happen near the full and new moon, when the sun and moon align. " + strings.Repeat("The range between high and low water is then largest. ", 4)},
		[2]string{"Neap tides", "Neap tides come at the quarter moons and have the smallest range. " + strings.Repeat("Harbour pilots plan deep-draught arrivals around them. ", 4)},
	)
}

func TestExtractFormats(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		data     []byte
		format   ingest.Format
		title    string
		contains []string
		absent   []string
		sections int
	}{
		{"pdf", "report.pdf", pdfFixture(), ingest.FormatPDF, "", []string{"4,210 containers", "copper-lantern-77"}, nil, 3},
		{"pdf misnamed", "report.txt", pdfFixture(), ingest.FormatPDF, "", []string{"31 dockers"}, nil, 3},
		{"docx", "manual.docx", docxFixture(), ingest.FormatDOCX, "Field manual", []string{"## Batteries", "# Equipment", "drawer nine"}, nil, 1},
		{"docx unnamed", "upload", docxFixture(), ingest.FormatDOCX, "Field manual", []string{"orange case"}, nil, 1},
		{"html", "tides.html", htmlFixture(), ingest.FormatHTML, "Tide tables explained", []string{"## Neap tides", "quarter moons"}, []string{"About us", "sponsored widgets", "tracking", "Copyright"}, 1},
		{"html misnamed", "tides.dat", htmlFixture(), ingest.FormatHTML, "Tide tables explained", []string{"Spring tides happen"}, nil, 1},
		{"markdown", "a.md", []byte("\ufeff# Heading\n\nBody text."), ingest.FormatMarkdown, "Heading", []string{"Body text."}, nil, 1},
		{"text unnamed", "notes", []byte("plain words"), ingest.FormatText, "", []string{"plain words"}, nil, 1},
		{"csv semicolons", "cities.csv", []byte("city;country;population\n\"Paris\";France;2100000\nLyon;France;520000\n"), ingest.FormatCSV, "", nil, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := ingest.Extract(tt.file, tt.data, ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if ex.Format != tt.format || ex.Title != tt.title || len(ex.Sections) != tt.sections {
				t.Fatalf("Extract = format %s title %q %d sections, want %s %q %d", ex.Format, ex.Title, len(ex.Sections), tt.format, tt.title, tt.sections)
			}
			var all strings.Builder
			for _, s := range ex.Sections {
				all.WriteString(s.Text)
			}
			for _, c := range tt.contains {
				if !strings.Contains(all.String(), c) {
					t.Errorf("text lacks %q:\n%s", c, all.String())
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(all.String(), a) {
					t.Errorf("text has %q, which is not main content:\n%s", a, all.String())
				}
			}
			if ex.Metadata["format"] != string(tt.format) {
				t.Errorf("metadata %v: want format %s", ex.Metadata, tt.format)
			}
		})
	}
}

func TestPDFPages(t *testing.T) {
	ex, err := ingest.Extract("r.pdf", pdfFixture(), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Metadata["pages"] != 3 {
		t.Errorf("pages = %v, want 3", ex.Metadata["pages"])
	}
	for i, s := range ex.Sections {
		if s.Metadata["page"] != i+1 {
			t.Errorf("section %d page = %v", i, s.Metadata["page"])
		}
	}
	if !strings.Contains(ex.Sections[2].Text, "copper-lantern-77") {
		t.Errorf("page 3 = %q", ex.Sections[2].Text)
	}
}

// TestTableChunks: every chunk starts with the header, rows are covered
// once each in order, and the metadata names sheet and row range.
func TestTableChunks(t *testing.T) {
	ch, _ := retrieval.NewChunker(retrieval.ChunkerConfig{MaxChars: 200})
	for _, tc := range []struct {
		name, file string
		data       []byte
		header     string
		sheets     map[string]int // sheet → rows after the header
	}{
		{"xlsx", "stock.xlsx", xlsxFixture(40), "sku | item | stock", map[string]int{"Inventory": 40, "Staff": 2}},
		{"csv", "stock.csv", []byte("sku,item,stock\n" + csvRows(40)), "sku | item | stock", map[string]int{"": 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := ingest.Extract(tc.file, tc.data, ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			chunks := ingest.Chunks(ch, 200, retrieval.Document{ID: "doc", Title: "Stock"}, ex)
			next := map[string]int{}
			for i, c := range chunks {
				if c.ID != fmt.Sprintf("doc#%d", i) || c.DocID != "doc" {
					t.Errorf("chunk %d id %q doc %q", i, c.ID, c.DocID)
				}
				sheet, _ := c.Metadata["sheet"].(string)
				if sheet == "Inventory" && !strings.HasPrefix(c.Text, tc.header+"\n") {
					t.Errorf("chunk %s does not start with the header: %q", c.ID, c.Text)
				}
				if sheet != "" && c.Title != "Stock › "+sheet {
					t.Errorf("chunk %s title %q", c.ID, c.Title)
				}
				if utf8.RuneCountInString(c.Text) > 200 {
					t.Errorf("chunk %s has %d chars", c.ID, utf8.RuneCountInString(c.Text))
				}
				start, end := c.Metadata["row_start"].(int), c.Metadata["row_end"].(int)
				if next[sheet] == 0 {
					next[sheet] = 2 // row 1 is the header
				}
				lines := strings.Count(c.Text, "\n")
				if start != next[sheet] || end-start+1 != lines {
					t.Errorf("chunk %s rows %d-%d with %d rows, want from %d", c.ID, start, end, lines, next[sheet])
				}
				next[sheet] = end + 1
			}
			for sheet, rows := range tc.sheets {
				if next[sheet] != rows+2 {
					t.Errorf("sheet %q covered up to row %d, want %d", sheet, next[sheet]-1, rows+1)
				}
			}
		})
	}
}

func csvRows(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "SKU-%04d,\"widget, model %d\",%d\n", i, i, i*3)
	}
	return b.String()
}

// TestBadFiles: each bad input is a *FileError of the right kind, with
// a reason that says what is wrong; none panics.
func TestBadFiles(t *testing.T) {
	valid := pdfFixture()
	small := ingest.Limits{MaxUnzippedBytes: 1 << 20, MaxZipEntries: 100, MaxFileBytes: 32 << 20}
	tests := []struct {
		name   string
		file   string
		data   []byte
		lim    ingest.Limits
		kind   error
		reason string
	}{
		{"corrupt pdf", "x.pdf", []byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage"), ingest.Limits{}, ingest.ErrCorrupt, "not a readable PDF"},
		{"truncated pdf", "x.pdf", valid[:len(valid)/2], ingest.Limits{}, ingest.ErrCorrupt, ""},
		{"pdf ending inside a hex string", "x.pdf", hexStringHang(), ingest.Limits{}, ingest.ErrCorrupt, "page 1: a content stream ends inside a hex string"},
		{"pdf without text", "x.pdf", ingesttest.PDF(""), ingest.Limits{}, ingest.ErrEmpty, "OCR"},
		{"pdf over the page limit", "x.pdf", valid, ingest.Limits{MaxPages: 2}, ingest.ErrTooLarge, "3 pages, over the limit of 2"},
		{"zip bomb docx", "bomb.docx", ingesttest.ZipBomb(8 << 20), small, ingest.ErrTooLarge, "decompresses to more than 1048576 bytes"},
		{"zip bomb header", "bomb.docx", ingesttest.ZipDeclaring(1<<40, 1024), ingest.Limits{}, ingest.ErrTooLarge, "zip bomb"},
		{"zip inflating past its header", "lie.docx", ingesttest.ZipDeclaring(100, 1<<20), ingest.Limits{}, ingest.ErrCorrupt, "reading word/document.xml"},
		{"too many entries", "many.docx", ingesttest.ManyEntries(150), small, ingest.ErrTooLarge, "151 archive entries"},
		{"docx without text", "x.docx", ingesttest.ZipBomb(0), ingest.Limits{}, ingest.ErrEmpty, "no text"},
		{"truncated docx", "x.docx", docxFixture()[:300], ingest.Limits{}, ingest.ErrCorrupt, "zip"},
		{"truncated xlsx", "x.xlsx", xlsxFixture(5)[:400], ingest.Limits{}, ingest.ErrCorrupt, ""},
		{"oversize", "big.md", []byte(strings.Repeat("a", 200)), ingest.Limits{MaxFileBytes: 100}, ingest.ErrTooLarge, "200 bytes, over the limit of 100"},
		{"invalid utf-8", "latin1.md", []byte("caf\xe9 au lait\nsecond line \xff"), ingest.Limits{}, ingest.ErrInvalidUTF8, "invalid UTF-8 at byte 3 (line 1)"},
		{"invalid utf-8 csv", "x.csv", []byte("a,b\n1,\xff\n"), ingest.Limits{}, ingest.ErrInvalidUTF8, "line 2"},
		{"utf-16", "x.txt", []byte("\xff\xfeh\x00i\x00"), ingest.Limits{}, ingest.ErrInvalidUTF8, "UTF-16 text; save it as UTF-8"},
		{"binary named markdown", "x.md", []byte("\x00\x01\x02\x03binary"), ingest.Limits{}, ingest.ErrMismatch, "binary"},
		{"text named pdf", "x.pdf", []byte("just text"), ingest.Limits{}, ingest.ErrMismatch, "not pdf"},
		{"legacy office", "old.doc", append([]byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1}, make([]byte, 512)...), ingest.Limits{}, ingest.ErrUnsupported, "save it as .docx or .xlsx"},
		{"encrypted xlsx", "secret.xlsx", append([]byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1}, make([]byte, 512)...), ingest.Limits{}, ingest.ErrUnsupported, "password-protected"},
		{"unknown binary", "x.bin", []byte("\x00\x01\x02\x03"), ingest.Limits{}, ingest.ErrUnsupported, "unsupported file type"},
		{"plain zip", "x.zip", ingesttest.ManyEntries(1)[:0:0], ingest.Limits{}, ingest.ErrUnsupported, ""},
		{"empty csv", "x.csv", []byte("\n\n"), ingest.Limits{}, ingest.ErrEmpty, ""},
		{"cells over the limit", "x.xlsx", xlsxFixture(50), ingest.Limits{MaxCells: 60}, ingest.ErrTooLarge, "more than 60 cells"},
		{"html without text", "x.html", []byte("<html><body><script>x()</script></body></html>"), ingest.Limits{}, ingest.ErrEmpty, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ingest.Extract(tt.file, tt.data, tt.lim)
			var fe *ingest.FileError
			if !errors.As(err, &fe) || !errors.Is(err, tt.kind) {
				t.Fatalf("Extract = %v, want a *FileError wrapping %v", err, tt.kind)
			}
			if fe.File != tt.file || !strings.Contains(fe.Reason, tt.reason) {
				t.Errorf("error %q: want file %s and reason containing %q", err, tt.file, tt.reason)
			}
			if !strings.HasPrefix(err.Error(), "ingest: "+tt.file) {
				t.Errorf("message %q does not start with the package and file", err)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want ingest.Format
	}{
		{"a.md", []byte("<div>markdown may start with html</div>"), ingest.FormatMarkdown},
		{"a.txt", []byte("hello"), ingest.FormatText},
		{"a.jsonl", []byte(`{"id":"x","text":"y"}`), ingest.FormatJSONL},
		{"a.csv", []byte("a,b\n1,2\n"), ingest.FormatCSV},
		{"noext", []byte("<!DOCTYPE html><html><body>x</body></html>"), ingest.FormatHTML},
		{"a.xlsx", xlsxFixture(1), ingest.FormatXLSX},
		{"a.docx", xlsxFixture(1), ingest.FormatXLSX}, // the content wins
		{"a.xlsx", docxFixture(), ingest.FormatDOCX},
		{"a.bin", pdfFixture(), ingest.FormatPDF},
	} {
		got, err := ingest.Detect(tc.name, tc.data)
		if err != nil || got != tc.want {
			t.Errorf("Detect(%s, %.20q) = %s, %v; want %s", tc.name, tc.data, got, err, tc.want)
		}
	}
	if !slices.Contains(ingest.Formats, ingest.FormatXLSX) {
		t.Error("Formats lacks xlsx")
	}
}

// hexStringHang is a PDF whose content stream ends in "<T": the PDF
// reader's lexer would loop forever on it (found by FuzzExtractPDF).
func hexStringHang() []byte {
	pdf := string(ingesttest.PDF("Annual report"))
	old := "(Annual report) Tj T*\nET"
	repl := "(Annual) Tj T*\n<T\n"
	return []byte(strings.Replace(pdf, old, repl+strings.Repeat(" ", len(old)-len(repl)), 1))
}
