package embedded_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/retrievaltest"
)

// TestDocumentsPersist: deletes and replaces written to the log survive
// a reopen, with their chunk counts and times, in both profiles.
func TestDocumentsPersist(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir)
	ctx := t.Context()
	for i := range 5 {
		id := fmt.Sprintf("d%d", i)
		if err := ix.Replace(ctx, "acme", id, retrievaltest.DocChunks(id, 3, func(j int) string { return fmt.Sprintf("Lighthouse log %s entry %d.", id, j) })); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ix.Delete(ctx, "acme", "d1"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Replace(ctx, "acme", "d2", retrievaltest.DocChunks("d2", 1, func(int) string { return "Rewritten lighthouse log." })); err != nil {
		t.Fatal(err)
	}
	want, err := ix.List(ctx, "acme", retrieval.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = open(t, dir)
	got, err := ix.List(ctx, "acme", retrieval.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || got.Total != 4 {
		t.Errorf("after reopen List = %+v, want %+v", got, want)
	}
	if n, _ := ix.Count(ctx, "acme"); n != 10 {
		t.Errorf("Count = %d, want 10", n)
	}
	for _, p := range ix.Profiles() {
		hits, err := ix.Search(ctx, "acme", p, retrieval.Query{Text: "lighthouse log entry", K: 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if h.DocID == "d1" || (h.DocID == "d2" && h.ID != "d2#0") {
				t.Errorf("%s finds %s after reopen", p, h.ID)
			}
		}
		if len(hits) != 10 {
			t.Errorf("%s: %d hits, want 10", p, len(hits))
		}
	}
	if _, err := ix.Document(ctx, "acme", "d1"); !errors.Is(err, retrieval.ErrNotFound) {
		t.Errorf("deleted d1 after reopen: %v", err)
	}
}

// TestDeleteManyRebuildsGraph deletes enough to make the graph rebuild
// and the log fold; searches stay right.
func TestDeleteManyRebuildsGraph(t *testing.T) {
	ix := open(t, t.TempDir())
	ctx := t.Context()
	var vs []retrieval.Version
	for i := range 100 {
		id := fmt.Sprintf("doc%03d", i)
		vs = append(vs, retrieval.Version{DocID: id, Chunks: retrievaltest.DocChunks(id, 2, func(j int) string { return fmt.Sprintf("Orchard note %d part %d.", i, j) })})
	}
	if err := ix.ReplaceBatch(ctx, "acme", vs); err != nil {
		t.Fatal(err)
	}
	for i := range 90 {
		if _, err := ix.Delete(ctx, "acme", fmt.Sprintf("doc%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := ix.Search(ctx, "acme", retrieval.ProfileVector, retrieval.Query{Text: "orchard note", K: 50})
	if err != nil || len(hits) != 20 {
		t.Fatalf("vector after deleting 90 of 100: %d hits, %v; want 20", len(hits), err)
	}
	p, _ := ix.List(ctx, "acme", retrieval.ListOptions{})
	if p.Total != 10 || p.Documents[0].ID != "doc090" {
		t.Errorf("List = %+v", p)
	}
}
