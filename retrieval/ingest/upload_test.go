package ingest_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/ingest"
	"github.com/agentbus/agentbus/retrieval/ingest/ingesttest"
)

func openIndex(t *testing.T) *embedded.Index {
	t.Helper()
	ix, err := embedded.Open(embedded.Config{Dir: filepath.Join(t.TempDir(), "index")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	return ix
}

func find(t *testing.T, b retrieval.Backend, text string) []retrieval.Hit {
	t.Helper()
	hits, err := b.Search(t.Context(), "acme", retrieval.ProfileBM25, retrieval.Query{Text: text, K: 5})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestFilesEveryFormat uploads one file of each format with a bad one
// among them: each fact is found, cited with its page, sheet or rows;
// the bad file is a problem and the rest is indexed; a shorter version
// replaces the old one with no stale chunk; Delete removes it.
func TestFilesEveryFormat(t *testing.T) {
	ix := openIndex(t)
	in := newIngester(t, ingest.Config{Backend: ix, Tenant: "acme", Chunker: retrieval.ChunkerConfig{MaxChars: 300}})
	files := []ingest.File{
		{Name: "report.pdf", Data: pdfFixture(), Metadata: map[string]any{"team": "ops"}},
		{Name: "manual.docx", Data: docxFixture()},
		{Name: "stock.xlsx", Data: xlsxFixture(60)},
		{Name: "tides.html", Data: htmlFixture()},
		{Name: "cities.csv", Data: []byte("city,mayor\nOslo,Marianne Borgen\nBergen,Marte Mjos Persen\n")},
		{Name: "broken.pdf", Data: []byte("%PDF-1.4 nothing else")},
		{Name: "bomb.docx", Data: ingesttest.ZipDeclaring(1<<40, 10)},
		{Name: "notes.md", ID: "kb/notes", Data: []byte("# Notes\n\nThe wifi password is heron-cascade.")},
	}
	sum, err := in.Files(t.Context(), files...)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != len(files) || sum.Documents != 6 || len(sum.Errors) != 2 {
		t.Fatalf("summary %+v: want %d files, 6 documents, 2 problems", sum, len(files))
	}
	if !errors.Is(sum.Err(), ingest.ErrCorrupt) || !errors.Is(sum.Err(), ingest.ErrTooLarge) {
		t.Errorf("Summary.Err() = %v: want ErrCorrupt and ErrTooLarge", sum.Err())
	}
	if sum.Errors[0].File != "broken.pdf" || sum.Errors[0].Code != ingest.CodeCorrupt || sum.Errors[1].Code != ingest.CodeTooLarge {
		t.Errorf("problems %+v", sum.Errors)
	}
	for _, tc := range []struct {
		query, doc string
		meta       map[string]any
	}{
		{"copper-lantern-77 pass phrase", "report.pdf", map[string]any{"page": 3.0, "pages": 3.0, "format": "pdf", "team": "ops"}},
		{"SKU-0057", "stock.xlsx", map[string]any{"sheet": "Inventory", "format": "xlsx"}},
		{"Grace admiral", "stock.xlsx", map[string]any{"sheet": "Staff", "row_start": 2.0, "row_end": 3.0}},
		{"theodolite orange case", "manual.docx", map[string]any{"format": "docx"}},
		{"quarter moons", "tides.html", map[string]any{"format": "html"}},
		{"Bergen mayor", "cities.csv", map[string]any{"row_start": 2.0, "format": "csv"}},
		{"heron-cascade", "kb/notes", map[string]any{"format": "markdown", "path": "kb/notes"}},
	} {
		hits := find(t, ix, tc.query)
		if len(hits) == 0 || hits[0].DocID != tc.doc {
			t.Errorf("%q: hits %v, want %s first", tc.query, hits, tc.doc)
			continue
		}
		for k, v := range tc.meta {
			if got := hits[0].Metadata[k]; got != v {
				t.Errorf("%q: metadata %s = %v (%T), want %v", tc.query, k, got, got, v)
			}
		}
	}
	if hits := find(t, ix, "SKU-0057"); len(hits) > 0 {
		start, end := hits[0].Metadata["row_start"].(float64), hits[0].Metadata["row_end"].(float64)
		if start > 58 || end < 58 || !strings.HasPrefix(hits[0].Text, "sku | item | stock\n") {
			t.Errorf("SKU-0057 (row 58) cited as rows %v-%v: %q", start, end, hits[0].Text)
		}
	}
	// A shorter version of the PDF replaces every chunk of the old one.
	before, err := ix.Document(t.Context(), "acme", "report.pdf")
	if err != nil || before.Chunks != 3 {
		t.Fatalf("Document(report.pdf) = %+v, %v: want 3 chunks", before, err)
	}
	if _, err := in.Files(t.Context(), ingest.File{Name: "report.pdf", Data: ingesttest.PDF("Only one page now: the ferry leaves at noon.")}); err != nil {
		t.Fatal(err)
	}
	if hits := find(t, ix, "copper-lantern-77"); len(hits) != 0 {
		t.Errorf("stale chunks after the re-upload: %v", hits)
	}
	after, err := ix.Document(t.Context(), "acme", "report.pdf")
	if err != nil || after.Chunks != 1 || after.Indexed.Before(before.Indexed) {
		t.Errorf("Document after re-upload = %+v, %v: want 1 chunk indexed later", after, err)
	}
	if n, err := ix.Delete(t.Context(), "acme", "report.pdf"); err != nil || n != 1 {
		t.Errorf("Delete = %d, %v", n, err)
	}
	if hits := find(t, ix, "ferry leaves at noon"); len(hits) != 0 {
		t.Errorf("found after Delete: %v", hits)
	}
}

// TestRunRereadsDeletedFile: the journal says a file is done, but its
// document was deleted since (e.g. through the API): a rerun reads it
// again instead of skipping it.
func TestRunRereadsDeletedFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.md": "# A\n\nAlpha text.", "b.md": "# B\n\nBeta text."})
	ix := openIndex(t)
	cfg := ingest.Config{Backend: ix, Tenant: "acme", Journal: filepath.Join(t.TempDir(), "j.jsonl")}
	if _, err := newIngester(t, cfg).Run(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Delete(t.Context(), "acme", "a.md"); err != nil {
		t.Fatal(err)
	}
	sum, err := newIngester(t, cfg).Run(t.Context(), dir)
	if err != nil || sum.Files != 1 || sum.Skipped != 1 {
		t.Fatalf("rerun = %+v, %v: want a.md read again, b.md skipped", sum, err)
	}
	if hits := find(t, ix, "alpha"); len(hits) != 1 {
		t.Errorf("alpha: %v", hits)
	}
}
