package ingest_test

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/ingest"
	"github.com/agentbus/agentbus/retrieval/ingest/ingesttest"
)

// fuzzLimits keep one fuzz input cheap.
var fuzzLimits = ingest.Limits{MaxFileBytes: 1 << 20, MaxUnzippedBytes: 4 << 20, MaxZipEntries: 64, MaxPages: 50, MaxCells: 20_000}

// checkExtract is every fuzz target's property: Extract returns either a
// *FileError or text that chunks into valid UTF-8 — it never panics
// (a reader's panic is caught and is a *FileError too).
func checkExtract(t *testing.T, name string, data []byte) {
	ex, err := ingest.Extract(name, data, fuzzLimits)
	if err != nil {
		var fe *ingest.FileError
		if !errors.As(err, &fe) || fe.Code() == "" || fe.Reason == "" {
			t.Fatalf("Extract(%s) error %v (%T): want a *FileError with a kind and a reason", name, err, err)
		}
		return
	}
	ch, _ := retrieval.NewChunker(retrieval.ChunkerConfig{})
	for _, c := range ingest.Chunks(ch, 0, retrieval.Document{ID: "d"}, ex) {
		if !utf8.ValidString(c.Text) || c.Text == "" {
			t.Fatalf("chunk %s text %q: want valid UTF-8, not empty", c.ID, c.Text)
		}
	}
}

func FuzzExtractPDF(f *testing.F) {
	valid := pdfFixture()
	f.Add(valid)
	f.Add(valid[:len(valid)/3])
	f.Add(ingesttest.PDF("(parens) \\ backslash", "ünïcödé"))
	f.Add([]byte("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF"))
	f.Add([]byte("%PDF-"))
	f.Fuzz(func(t *testing.T, data []byte) { checkExtract(t, "f.pdf", data) })
}

func FuzzExtractDOCX(f *testing.F) {
	f.Add(docxFixture())
	f.Add(ingesttest.DOCX("", ingesttest.Para{Style: "Heading7", Text: "x"}, ingesttest.Para{Text: "<&>"}))
	f.Add(ingesttest.ZipDeclaring(100, 1000))
	f.Add(ingesttest.ManyEntries(3))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) { checkExtract(t, "f.docx", data) })
}

func FuzzExtractXLSX(f *testing.F) {
	f.Add(xlsxFixture(3))
	f.Add(ingesttest.XLSX(ingesttest.Sheet{Name: "E", Rows: [][]any{{"", ""}, {nil, 1.5}}}))
	f.Add([]byte("PK\x03\x04xl/"))
	f.Fuzz(func(t *testing.T, data []byte) { checkExtract(t, "f.xlsx", data) })
}

func FuzzExtractCSV(f *testing.F) {
	f.Add([]byte("a,b\n1,2\n"))
	f.Add([]byte("a;b\n\"x;y\";\"unterminated\n"))
	f.Add([]byte("\ufeffh\tk\n\t\t\n1\t2\t3\n"))
	f.Add([]byte("a,b\n\xff,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) { checkExtract(t, "f.csv", data) })
}

func FuzzExtractHTML(f *testing.F) {
	f.Add(htmlFixture())
	f.Add([]byte("<html><head><meta charset=\"iso-8859-1\"></head><body><p>caf\xe9</p></body></html>"))
	f.Add([]byte("<h1>a<h2>b</h1><table><tr><td>x</table>"))
	f.Add([]byte("<!DOCTYPE html><body>"))
	f.Fuzz(func(t *testing.T, data []byte) { checkExtract(t, "f.html", data) })
}

func FuzzDetect(f *testing.F) {
	f.Add("a.md", []byte("# x"))
	f.Add("a.pdf", pdfFixture()[:40])
	f.Add("", []byte("PK\x03\x04word/"))
	f.Add("a.txt", []byte{0xff, 0xfe, 0})
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		got, err := ingest.Detect(name, data)
		if (err == nil) == (got == "") {
			t.Fatalf("Detect(%q) = %q, %v: want a format or an error", name, got, err)
		}
		if err == nil {
			checkExtract(t, name, data)
		}
	})
}
