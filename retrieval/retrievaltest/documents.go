package retrievaltest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/retrieval"
)

// RunDocuments runs the document-management part of the conformance
// suite (delete, list, replace and its atomicity) against stores made by
// newStore, which must return a fresh, empty store for each subtest and
// arrange for its Close. Run it beside Run for every DocumentStore.
func RunDocuments(t *testing.T, newStore func(t *testing.T) retrieval.DocumentStore) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, retrieval.DocumentStore)
	}{
		{"DeleteRemovesEveryChunk", testDelete},
		{"DeleteUnknown", testDeleteUnknown},
		{"ListPages", testList},
		{"DocumentInfo", testDocumentInfo},
		{"ReplaceFewerChunks", testReplaceFewer},
		{"ReplaceNothingDeletes", testReplaceNothing},
		{"ReplaceRefusesBadChunks", testReplaceInvalid},
		{"ReplaceBatch", testReplaceBatch},
		{"ReplaceAtomic", testReplaceAtomic},
		{"DocumentsInvalidTenant", testDocumentsInvalidTenant},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newStore(t)) })
	}
}

// DocChunks makes n chunks of one document, "<doc>#0" … with texts
// produced by text(i).
func DocChunks(doc string, n int, text func(i int) string) []retrieval.Chunk {
	out := make([]retrieval.Chunk, n)
	for i := range out {
		out[i] = retrieval.Chunk{ID: fmt.Sprintf("%s#%d", doc, i), DocID: doc, Title: "Title of " + doc,
			Text: text(i), Source: doc + ".md"}
	}
	return out
}

func replace(t *testing.T, d retrieval.DocumentStore, tenant, doc string, chunks []retrieval.Chunk) {
	t.Helper()
	if err := d.Replace(t.Context(), tenant, doc, chunks); err != nil {
		t.Fatalf("Replace(%s, %s, %d chunks): %v", tenant, doc, len(chunks), err)
	}
}

func testDelete(t *testing.T, d retrieval.DocumentStore) {
	gone := DocChunks("gone", 3, func(i int) string { return fmt.Sprintf("Obsolete pricing sheet part %d lists the gadget tariff.", i) })
	kept := DocChunks("kept", 2, func(i int) string { return fmt.Sprintf("Current holiday rota part %d.", i) })
	index(t, d, TenantA, append(gone, kept...))
	index(t, d, TenantB, DocChunks("gone", 1, func(int) string { return "The other tenant's gadget tariff." }))
	n, err := d.Delete(t.Context(), TenantA, "gone")
	if err != nil || n != 3 {
		t.Fatalf("Delete = %d, %v; want 3 chunks removed", n, err)
	}
	if c := count(t, d, TenantA); c != 2 {
		t.Errorf("Count after Delete = %d, want 2", c)
	}
	for _, p := range profiles {
		for _, h := range search(t, d, TenantA, p, retrieval.Query{Text: "obsolete pricing gadget tariff", K: 10}) {
			if h.DocID == "gone" {
				t.Errorf("%s finds deleted chunk %s", p, h.ID)
			}
		}
	}
	if _, err := d.Document(t.Context(), TenantA, "gone"); !errors.Is(err, retrieval.ErrNotFound) {
		t.Errorf("Document of a deleted document: %v, want ErrNotFound", err)
	}
	if c := count(t, d, TenantB); c != 1 {
		t.Errorf("Delete in %s touched %s: Count = %d, want 1", TenantA, TenantB, c)
	}
	if _, err := d.Delete(t.Context(), TenantA, "gone"); !errors.Is(err, retrieval.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
}

func testDeleteUnknown(t *testing.T, d retrieval.DocumentStore) {
	for _, tenant := range []string{TenantA, TenantEmpty} {
		if n, err := d.Delete(t.Context(), tenant, "never-indexed"); !errors.Is(err, retrieval.ErrNotFound) || n != 0 {
			t.Errorf("Delete(%s, never-indexed) = %d, %v; want 0, ErrNotFound", tenant, n, err)
		}
	}
}

func testList(t *testing.T, d retrieval.DocumentStore) {
	before := time.Now().Add(-time.Second)
	var ids []string
	for i := range 23 {
		id := fmt.Sprintf("doc-%02d", i)
		ids = append(ids, id)
		replace(t, d, TenantA, id, DocChunks(id, 1+i%3, func(j int) string { return fmt.Sprintf("Listing text %d of %s.", j, id) }))
	}
	after := time.Now().Add(time.Second)
	var got []retrieval.DocumentInfo
	opts := retrieval.ListOptions{Limit: 10}
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("List does not end")
		}
		p, err := d.List(t.Context(), TenantA, opts)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != len(ids) {
			t.Errorf("page %d Total = %d, want %d", pages, p.Total, len(ids))
		}
		if len(p.Documents) > 10 {
			t.Errorf("page %d has %d documents, limit 10", pages, len(p.Documents))
		}
		got = append(got, p.Documents...)
		if p.Next == "" {
			break
		}
		opts.After = p.Next
	}
	if len(got) != len(ids) {
		t.Fatalf("listed %d documents, want %d", len(got), len(ids))
	}
	for i, info := range got {
		if info.ID != ids[i] || info.Chunks != 1+i%3 {
			t.Errorf("document %d = %s with %d chunks, want %s with %d", i, info.ID, info.Chunks, ids[i], 1+i%3)
		}
		if info.Indexed.Before(before) || info.Indexed.After(after) {
			t.Errorf("%s indexed at %v, want between %v and %v", info.ID, info.Indexed, before, after)
		}
	}
	p, err := d.List(t.Context(), TenantEmpty, retrieval.ListOptions{})
	if err != nil || len(p.Documents) != 0 || p.Total != 0 || p.Next != "" {
		t.Errorf("List of an empty tenant = %+v, %v", p, err)
	}
	p, err = d.List(t.Context(), TenantA, retrieval.ListOptions{After: ids[len(ids)-1]})
	if err != nil || len(p.Documents) != 0 || p.Next != "" {
		t.Errorf("List after the last = %+v, %v", p, err)
	}
}

func testDocumentInfo(t *testing.T, d retrieval.DocumentStore) {
	replace(t, d, TenantA, "handbook", DocChunks("handbook", 4, func(i int) string { return fmt.Sprintf("Handbook section %d.", i) }))
	info, err := d.Document(t.Context(), TenantA, "handbook")
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != "handbook" || info.Chunks != 4 || info.Title != "Title of handbook" || info.Source != "handbook.md" || info.Indexed.IsZero() {
		t.Errorf("Document = %+v: want id, 4 chunks, title, source, time", info)
	}
	if _, err := d.Document(t.Context(), TenantB, "handbook"); !errors.Is(err, retrieval.ErrNotFound) {
		t.Errorf("Document in another tenant: %v, want ErrNotFound", err)
	}
}

func testReplaceFewer(t *testing.T, d retrieval.DocumentStore) {
	replace(t, d, TenantA, "policy", DocChunks("policy", 4, func(i int) string { return fmt.Sprintf("Old policy clause %d mentions fax machines.", i) }))
	index(t, d, TenantA, Chunks("other", "An unrelated memo about fax machines."))
	replace(t, d, TenantA, "policy", DocChunks("policy", 1, func(int) string { return "New policy: email only." }))
	if c := count(t, d, TenantA); c != 2 {
		t.Errorf("Count after replacing 4 chunks by 1 = %d, want 2", c)
	}
	for _, p := range profiles {
		for _, h := range search(t, d, TenantA, p, retrieval.Query{Text: "old policy clause fax machines", K: 10}) {
			if h.DocID == "policy" && h.Text != "New policy: email only." {
				t.Errorf("%s finds stale chunk %s %q", p, h.ID, h.Text)
			}
		}
	}
	info, err := d.Document(t.Context(), TenantA, "policy")
	if err != nil || info.Chunks != 1 {
		t.Errorf("Document = %+v, %v; want 1 chunk", info, err)
	}
}

func testReplaceNothing(t *testing.T, d retrieval.DocumentStore) {
	replace(t, d, TenantA, "x", DocChunks("x", 2, func(i int) string { return "Temporary note." }))
	replace(t, d, TenantA, "x", nil)
	if _, err := d.Document(t.Context(), TenantA, "x"); !errors.Is(err, retrieval.ErrNotFound) {
		t.Errorf("Document after Replace with no chunks: %v, want ErrNotFound", err)
	}
	replace(t, d, TenantEmpty, "never", nil) // nothing to delete: no error
}

func testReplaceInvalid(t *testing.T, d retrieval.DocumentStore) {
	replace(t, d, TenantA, "doc", DocChunks("doc", 2, func(i int) string { return "Original text stays." }))
	bad := [][]retrieval.Chunk{
		{{ID: "doc#0", DocID: "doc", Text: "fine"}, {ID: "", DocID: "doc", Text: "no id"}},
		{{ID: "doc#0", DocID: "doc", Text: " \n"}},
		{{ID: "doc#0", DocID: "another", Text: "wrong document"}},
		{{ID: "doc#0", Text: "twice"}, {ID: "doc#0", Text: "twice"}},
	}
	for _, chunks := range bad {
		if err := d.Replace(t.Context(), TenantA, "doc", chunks); !errors.Is(err, retrieval.ErrInvalidDocument) {
			t.Errorf("Replace(%+v) = %v, want ErrInvalidDocument", chunks, err)
		}
	}
	if err := d.Replace(t.Context(), TenantA, "", DocChunks("", 1, func(int) string { return "x" })); !errors.Is(err, retrieval.ErrInvalidDocument) {
		t.Errorf("Replace with an empty doc id = %v, want ErrInvalidDocument", err)
	}
	if info, err := d.Document(t.Context(), TenantA, "doc"); err != nil || info.Chunks != 2 {
		t.Errorf("after refused replaces: %+v, %v; want the 2 original chunks", info, err)
	}
	// An empty DocID is the document's.
	replace(t, d, TenantA, "doc", []retrieval.Chunk{{ID: "doc#0", Text: "Replacement without doc id."}})
	hits := search(t, d, TenantA, retrieval.ProfileBM25, retrieval.Query{Text: "replacement without doc id"})
	if len(hits) == 0 || hits[0].DocID != "doc" {
		t.Errorf("hits %v: want doc#0 with DocID doc", hits)
	}
}

func testReplaceBatch(t *testing.T, d retrieval.DocumentStore) {
	replace(t, d, TenantA, "a", DocChunks("a", 3, func(i int) string { return "Alpha old." }))
	err := d.ReplaceBatch(t.Context(), TenantA, []retrieval.Version{
		{DocID: "a", Chunks: DocChunks("a", 1, func(int) string { return "Alpha new." })},
		{DocID: "b", Chunks: DocChunks("b", 2, func(int) string { return "Beta new." })},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.List(t.Context(), TenantA, retrieval.ListOptions{})
	if err != nil || len(p.Documents) != 2 || p.Documents[0].Chunks != 1 || p.Documents[1].Chunks != 2 {
		t.Errorf("List after ReplaceBatch = %+v, %v; want a (1 chunk), b (2 chunks)", p, err)
	}
	err = d.ReplaceBatch(t.Context(), TenantA, []retrieval.Version{{DocID: "a"}, {DocID: "a"}})
	if !errors.Is(err, retrieval.ErrInvalidDocument) {
		t.Errorf("ReplaceBatch with a document twice = %v, want ErrInvalidDocument", err)
	}
}

// testReplaceAtomic replaces one document many times, alternating
// between versions of 2 and 5 chunks whose every chunk says which version
// it is, while searchers query words every version has: no search may
// find chunks of two versions, and none may find nothing.
func testReplaceAtomic(t *testing.T, d retrieval.DocumentStore) {
	const replaces = 40
	version := func(v int) []retrieval.Chunk {
		n := 2 + 3*(v%2)
		return DocChunks("atom", n, func(i int) string {
			return fmt.Sprintf("Zeppelin hangar inventory version v%03d part %d.", v, i)
		})
	}
	replace(t, d, TenantA, "atom", version(0))
	var done atomic.Bool
	var wg sync.WaitGroup
	var searches atomic.Int64
	errs := make(chan string, 16)
	for _, p := range profiles {
		wg.Go(func() {
			for !done.Load() {
				hits, err := d.Search(t.Context(), TenantA, p, retrieval.Query{Text: "zeppelin hangar inventory", K: 20})
				if err != nil {
					errs <- fmt.Sprintf("%s: %v", p, err)
					return
				}
				searches.Add(1)
				seen := map[string]bool{}
				for _, h := range hits {
					if _, rest, ok := strings.Cut(h.Text, "version "); ok {
						seen[rest[:4]] = true
					}
				}
				if len(seen) != 1 {
					select {
					case errs <- fmt.Sprintf("%s: one search found versions %v (%v)", p, slices.Sorted(maps.Keys(seen)), IDs(hits)):
					default:
					}
					return
				}
			}
		})
	}
	for v := 1; v <= replaces; v++ {
		replace(t, d, TenantA, "atom", version(v))
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if searches.Load() == 0 {
		t.Error("no search ran during the replaces")
	}
	info, err := d.Document(t.Context(), TenantA, "atom")
	if err != nil || info.Chunks != len(version(replaces)) {
		t.Errorf("after %d replaces: %+v, %v; want %d chunks", replaces, info, err, len(version(replaces)))
	}
}

func testDocumentsInvalidTenant(t *testing.T, d retrieval.DocumentStore) {
	for _, tenant := range []string{"", "A", "a.b"} {
		if err := d.Replace(t.Context(), tenant, "x", nil); !errors.Is(err, retrieval.ErrInvalidTenant) {
			t.Errorf("Replace(%q) = %v", tenant, err)
		}
		if _, err := d.Delete(t.Context(), tenant, "x"); !errors.Is(err, retrieval.ErrInvalidTenant) {
			t.Errorf("Delete(%q) = %v", tenant, err)
		}
		if _, err := d.Document(t.Context(), tenant, "x"); !errors.Is(err, retrieval.ErrInvalidTenant) {
			t.Errorf("Document(%q) = %v", tenant, err)
		}
		if _, err := d.List(t.Context(), tenant, retrieval.ListOptions{}); !errors.Is(err, retrieval.ErrInvalidTenant) {
			t.Errorf("List(%q) = %v", tenant, err)
		}
	}
}
