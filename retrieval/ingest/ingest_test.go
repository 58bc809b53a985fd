package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/ingest"
)

// write creates files under dir: name → content.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func jsonl(records ...map[string]any) string {
	var b strings.Builder
	for _, r := range records {
		line, _ := json.Marshal(r)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func newIngester(t *testing.T, cfg ingest.Config) *ingest.Ingester {
	t.Helper()
	in, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestConfig(t *testing.T) {
	b := newBackend(t)
	tests := []struct {
		name string
		cfg  ingest.Config
		ok   bool
	}{
		{"ok", ingest.Config{Backend: b, Tenant: "acme"}, true},
		{"no backend", ingest.Config{Tenant: "acme"}, false},
		{"bad tenant", ingest.Config{Backend: b, Tenant: "a.b"}, false},
		{"bad chunker", ingest.Config{Backend: b, Tenant: "acme", Chunker: retrieval.ChunkerConfig{MaxChars: 5}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ingest.New(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("New = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestRunReadsEveryKindAndReportsBadLines(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"guide.md":       "# The Guide\n\nStreams keep messages.\n\n## Consumers\n\nConsumers read them.\n",
		"notes/todo.txt": "Remember the milk.",
		"notes/skip.pdf": "not read",
		".git/HEAD.md":   "# hidden",
		"docs.jsonl": jsonl(
			map[string]any{"id": "r1", "title": "Record one", "text": "First record text.", "metadata": map[string]any{"date": "2024-05-01", "lang": "en"}},
			map[string]any{"id": "r2", "title": "No text"},
		) + "{not json\n\n" + jsonl(
			map[string]any{"id": "r1", "text": "Same id again."},
			map[string]any{"id": "r3", "text": "Third record.", "extra": true},
			map[string]any{"id": "r4", "text": "Fourth record."},
		),
	})
	b := newBackend(t)
	var progress []ingest.Progress
	in := newIngester(t, ingest.Config{Backend: b, Tenant: "acme", Journal: filepath.Join(t.TempDir(), "j.jsonl"),
		Progress: func(p ingest.Progress) { progress = append(progress, p) }})
	sum, err := in.Run(t.Context(), dir, filepath.Join(dir, "notes", "skip.pdf"), filepath.Join(dir, "missing.md"))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 4 || sum.Documents != 4 || sum.Skipped != 0 {
		t.Errorf("summary %+v: want 4 files, 4 documents (guide, todo, r1, r4), 0 skipped", sum)
	}
	jl := filepath.ToSlash(filepath.Join(dir, "docs.jsonl"))
	wantErrs := []string{
		filepath.ToSlash(filepath.Join(dir, "missing.md")) + ": stat: no such file or directory",
		jl + ":2: /text: required property is missing",
		jl + ":3: not valid JSON: ",
		jl + ":5: duplicate document id \"r1\" (first at " + jl + ":1)",
		jl + ":6: /extra: property \"extra\" is not allowed here",
		filepath.ToSlash(filepath.Join(dir, "notes", "skip.pdf")) + ": named .pdf but the content is text, not pdf",
	}
	if len(sum.Errors) != len(wantErrs) {
		t.Fatalf("errors %q, want %q", sum.Errors, wantErrs)
	}
	for i, w := range wantErrs {
		if got := sum.Errors[i].String(); !strings.HasPrefix(got, w) {
			t.Errorf("error %d = %q, want prefix %q", i, got, w)
		}
	}
	chunks := b.chunks("acme")
	if sum.Chunks != len(chunks) {
		t.Errorf("summary says %d chunks, index has %d", sum.Chunks, len(chunks))
	}
	want := map[string]string{ // id → title
		"guide.md#0":       "The Guide",
		"guide.md#1":       "The Guide › Consumers",
		"notes/todo.txt#0": "todo",
		"r1#0":             "Record one",
		"r4#0":             "",
	}
	if len(chunks) != len(want) {
		t.Errorf("indexed %v, want %v", slices.Sorted(mapsKeys(chunks)), want)
	}
	for id, title := range want {
		c, ok := chunks[id]
		if !ok || c.Title != title {
			t.Errorf("chunk %s = %+v (indexed %v), want title %q", id, c, ok, title)
		}
	}
	if r1 := chunks["r1#0"]; r1.Date.IsZero() || r1.Metadata["lang"] != "en" || r1.Source != jl {
		t.Errorf("r1#0 = %+v: want date, metadata and source kept", r1)
	}
	last := progress[len(progress)-1]
	if last.Files != 4 || last.FilesTotal != 4 || last.Bytes != last.BytesTotal || last.Chunks != len(chunks) || last.Errors != len(wantErrs) {
		t.Errorf("last progress %+v: want every file and byte done", last)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i].Bytes < progress[i-1].Bytes || progress[i].Chunks < progress[i-1].Chunks {
			t.Fatalf("progress went back: %+v then %+v", progress[i-1], progress[i])
		}
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestRerunSkipsFinishedFilesAndRedoesChangedOnes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.md": "Alpha.", "b.txt": "Bravo.", "c.jsonl": jsonl(map[string]any{"id": "c", "text": "Charlie."})})
	b := newBackend(t)
	journal := filepath.Join(t.TempDir(), "index-journal", "acme.jsonl")
	in := newIngester(t, ingest.Config{Backend: b, Tenant: "acme", Journal: journal})
	if _, err := in.Run(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	b.resetCalls()
	sum, err := in.Run(t.Context(), dir)
	if err != nil || sum.Skipped != 3 || sum.Files != 0 || sum.Chunks != 0 || b.calls() != 0 {
		t.Fatalf("rerun: %+v, %v, %d index calls: want 3 skipped, nothing indexed", sum, err, b.calls())
	}
	write(t, dir, map[string]string{"b.txt": "Bravo, changed."})
	sum, err = in.Run(t.Context(), dir)
	if err != nil || sum.Skipped != 2 || sum.Files != 1 || sum.Chunks != 1 {
		t.Fatalf("after a change: %+v, %v: want b.txt alone read again", sum, err)
	}
	if got := b.chunks("acme")["b.txt#0"].Text; got != "Bravo, changed." {
		t.Errorf("b.txt#0 = %q, want the new text", got)
	}
	// Another tenant, or the same journal after the index was emptied,
	// starts from nothing.
	other := newIngester(t, ingest.Config{Backend: b, Tenant: "globex", Journal: journal})
	if sum, err := other.Run(t.Context(), dir); err != nil || sum.Files != 3 {
		t.Fatalf("other tenant: %+v, %v: want every file read", sum, err)
	}
	fresh := newBackend(t)
	again := newIngester(t, ingest.Config{Backend: fresh, Tenant: "acme", Journal: journal})
	if sum, err := again.Run(t.Context(), dir); err != nil || sum.Files != 3 || len(fresh.chunks("acme")) != 3 {
		t.Fatalf("empty index: %+v, %v: want every file read again", sum, err)
	}
}

// cancelAfter cancels a context once n Index calls have succeeded.
type cancelAfter struct {
	retrieval.Backend
	mu      sync.Mutex
	n       int
	cancel  context.CancelFunc
	indexed []string
}

func (c *cancelAfter) Index(ctx context.Context, tenant string, chunks []retrieval.Chunk) error {
	if err := c.Backend.Index(ctx, tenant, chunks); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range chunks {
		c.indexed = append(c.indexed, ch.ID)
	}
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return nil
}

func TestInterruptedRunResumes(t *testing.T) {
	// 40 records of two chunks each (MaxChars 60, no overlap), batches of
	// 5 chunks: records straddle batches, so resuming after the last
	// whole record redoes at most one record's chunk.
	var recs []map[string]any
	for i := range 40 {
		recs = append(recs, map[string]any{"id": fmt.Sprintf("doc-%02d", i),
			"text": fmt.Sprintf("Record %d opens with this first sentence.\n\nRecord %d closes with another one.", i, i)})
	}
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.md": "Before the records.", "big.jsonl": jsonl(recs...), "z.txt": "After the records."})
	const total = 40*2 + 2
	for name, open := range map[string]func(t *testing.T) retrieval.Backend{
		"memory":   func(t *testing.T) retrieval.Backend { return newBackend(t) },
		"embedded": openEmbedded,
	} {
		t.Run(name, func(t *testing.T) { testResume(t, open(t), dir, total) })
	}
}

func openEmbedded(t *testing.T) retrieval.Backend {
	t.Helper()
	b, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func testResume(t *testing.T, b retrieval.Backend, dir string, total int) {
	journal := filepath.Join(t.TempDir(), "j.jsonl")
	cfg := ingest.Config{Tenant: "acme", Journal: journal, BatchSize: 5,
		Chunker: retrieval.ChunkerConfig{MaxChars: 60, Overlap: -1}}
	for _, after := range []int{3, 4} { // two interruptions, then a full run
		ctx, cancel := context.WithCancel(t.Context())
		cb := &cancelAfter{Backend: b, n: after, cancel: cancel}
		cfg.Backend = cb
		_, err := newIngester(t, cfg).Run(ctx, dir)
		cancel()
		if err == nil || ctx.Err() == nil {
			t.Fatalf("run cancelled after %d batches returned %v", after, err)
		}
		if len(cb.indexed) != after*5 {
			t.Fatalf("interrupted run indexed %d chunks, want %d", len(cb.indexed), after*5)
		}
	}
	cb := &cancelAfter{Backend: b, n: -1}
	cfg.Backend = cb
	sum, err := newIngester(t, cfg).Run(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := b.Count(t.Context(), "acme")
	if err != nil || n != total {
		t.Fatalf("Count = %d, %v after resuming: want %d", n, err, total)
	}
	// 35 chunks were written before; the rest, plus at most one redone
	// chunk per interruption, now.
	if redo := len(cb.indexed) - (total - 35); redo < 0 || redo > 2 {
		t.Errorf("final run indexed %d chunks (%v): want %d plus at most 2 redone", len(cb.indexed), cb.indexed, total-35)
	}
	if sum.Skipped != 1 || sum.Files != 2 {
		t.Errorf("final run %+v: want a.md skipped, big.jsonl resumed, z.txt read", sum)
	}
	if slices.Contains(cb.indexed, "doc-00#0") || slices.Contains(cb.indexed, "a.md#0") {
		t.Errorf("final run redid finished work: %v", cb.indexed)
	}
	// No duplicates: each record's closing sentence is found once, as
	// its own chunk.
	hits, err := b.Search(t.Context(), "acme", b.Profiles()[0], retrieval.Query{Text: "Record 17 closes", K: total})
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for _, h := range hits {
		if h.ID == "doc-17#1" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("doc-17#1 found %d times in %v, want once", n, hits)
	}
}

func TestJSONLReader(t *testing.T) {
	b := newBackend(t)
	in := newIngester(t, ingest.Config{Backend: b, Tenant: "acme"})
	src := strings.NewReader(jsonl(map[string]any{"id": "x", "text": "Ex."}) + `{"id":"y"}` + "\n")
	sum, err := in.JSONL(t.Context(), "embedded.jsonl", src)
	if err != nil || sum.Documents != 1 || sum.Chunks != 1 || len(sum.Errors) != 1 {
		t.Fatalf("JSONL = %+v, %v: want one document and one error", sum, err)
	}
	if got := sum.Errors[0].String(); got != "embedded.jsonl:2: /text: required property is missing" {
		t.Errorf("error = %q", got)
	}
}

// TestSchemaGoldens feeds the schema's invalid goldens as JSONL lines:
// each is reported with its pointer and the run goes on.
func TestSchemaGoldens(t *testing.T) {
	want := map[string]string{
		"empty-id":        "/id: ",
		"missing-text":    "/text: required property is missing",
		"nested-metadata": "/metadata/tags: ",
		"unknown-field":   "/body: property \"body\" is not allowed here",
		"numbers":         "/id: got number, want string; /text: got number, want string",
	}
	dir := t.TempDir()
	var lines []string
	var names []string
	for name := range want {
		raw, err := os.ReadFile(filepath.Join("..", "..", "schemas", "testdata", "invalid", "index.record", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(string(raw)))
		names = append(names, name)
	}
	valid, err := os.ReadFile(filepath.Join("..", "..", "schemas", "testdata", "valid", "index.record", "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, strings.TrimSpace(string(valid)))
	write(t, dir, map[string]string{"g.jsonl": strings.Join(lines, "\n")})
	b := newBackend(t)
	sum, err := newIngester(t, ingest.Config{Backend: b, Tenant: "acme"}).Run(t.Context(), dir)
	if err != nil || sum.Documents != 1 || len(sum.Errors) != len(want) {
		t.Fatalf("Run = %+v, %v: want 1 document, %d errors", sum, err, len(want))
	}
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			p := sum.Errors[i]
			if p.Line != i+1 || !strings.HasPrefix(p.Reason, want[name]) {
				t.Errorf("problem %+v: want line %d, reason starting %q", p, i+1, want[name])
			}
		})
	}
}
