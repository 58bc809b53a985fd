package vespa_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/retrievaltest"
	"github.com/agentbus/agentbus/retrieval/vespa"
	"github.com/agentbus/agentbus/retrieval/vespa/vespatest"
)

// TestReplaceOrder: Replace puts every new chunk before it removes the
// document's other generations by selection, on the content cluster.
func TestReplaceOrder(t *testing.T) {
	b, srv := newBackend(t)
	ctx := t.Context()
	if err := b.Replace(ctx, "acme", `say "hi"`, retrievaltest.DocChunks(`say "hi"`, 3, func(i int) string { return "Old greeting." })); err != nil {
		t.Fatal(err)
	}
	before := len(srv.DocumentRequests())
	if err := b.Replace(ctx, "acme", `say "hi"`, retrievaltest.DocChunks(`say "hi"`, 1, func(i int) string { return "New greeting." })); err != nil {
		t.Fatal(err)
	}
	reqs := srv.DocumentRequests()[before:]
	if len(reqs) != 2 || !strings.HasPrefix(reqs[0], "POST /document/v1/agentbus/chunk_acme/docid/") {
		t.Fatalf("requests %q: want one put, then the delete", reqs)
	}
	u, _ := url.Parse(strings.TrimPrefix(reqs[1], "DELETE "))
	sel := u.Query().Get("selection")
	if !strings.HasPrefix(reqs[1], "DELETE /document/v1/agentbus/chunk_acme/docid?") || u.Query().Get("cluster") != "agentbus_content" ||
		!strings.HasPrefix(sel, `chunk_acme.doc_id=="say \"hi\"" and chunk_acme.gen!=`) {
		t.Errorf("delete %q (selection %q): want a selection delete of the other generations on agentbus_content", reqs[1], sel)
	}
	if n, _ := b.Count(ctx, "acme"); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}

// TestReplaceFailedPutKeepsOld: when a put fails nothing is removed; the
// old chunks stay findable and a retry converges.
func TestReplaceFailedPutKeepsOld(t *testing.T) {
	b, srv := newBackend(t, func(c *vespa.Config) { c.FeedConcurrency = 1; c.MaxRetries = -1 })
	ctx := t.Context()
	old := retrievaltest.DocChunks("d", 3, func(i int) string { return fmt.Sprintf("Original paragraph %d about kestrels.", i) })
	if err := b.Replace(ctx, "acme", "d", old); err != nil {
		t.Fatal(err)
	}
	before := len(srv.DocumentRequests())
	srv.FailFeeds(vespatest.Fault{Status: http.StatusInternalServerError, Message: "disk full"})
	next := retrievaltest.DocChunks("d", 2, func(i int) string { return fmt.Sprintf("Revised paragraph %d about kestrels.", i) })
	err := b.Replace(ctx, "acme", "d", next)
	if !errors.Is(err, vespa.ErrFeed) {
		t.Fatalf("Replace with a failing put = %v, want ErrFeed", err)
	}
	for _, r := range srv.DocumentRequests()[before:] {
		if strings.HasPrefix(r, "DELETE") {
			t.Errorf("a delete was sent after a failed put: %s", r)
		}
	}
	hits, err := b.Search(ctx, "acme", retrieval.ProfileBM25, retrieval.Query{Text: "kestrels", K: 10})
	if err != nil || len(hits) == 0 {
		t.Fatalf("after a failed replace: %v, %v; want hits", hits, err)
	}
	if err := b.Replace(ctx, "acme", "d", next); err != nil {
		t.Fatal(err)
	}
	if info, err := b.Document(ctx, "acme", "d"); err != nil || info.Chunks != 2 {
		t.Errorf("after the retry: %+v, %v; want 2 chunks", info, err)
	}
}

// TestSearchHidesOlderGeneration: with two generations of a document
// stored (a Replace under way), a search returns only the newest.
func TestSearchHidesOlderGeneration(t *testing.T) {
	b, _ := newBackend(t)
	ctx := t.Context()
	// The state in the middle of a Replace from 3 chunks to 1: chunk #0
	// overwritten with the new generation, #1 and #2 still of the old one
	// (here generation 0, written by Index).
	if err := b.Replace(ctx, "acme", "doc", retrievaltest.DocChunks("doc", 1, func(int) string { return "Osprey nest count: new survey." })); err != nil {
		t.Fatal(err)
	}
	stale := retrievaltest.DocChunks("doc", 3, func(i int) string { return "Osprey nest count: old survey." })[1:]
	if err := b.Index(ctx, "acme", stale); err != nil {
		t.Fatal(err)
	}
	for _, p := range b.Profiles() {
		hits, err := b.Search(ctx, "acme", p, retrieval.Query{Text: "osprey nest count survey", K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].ID != "doc#0" {
			t.Errorf("%s: %v, want only doc#0 (the newest generation)", p, retrievaltest.IDs(hits))
		}
	}
}

// TestVisitContinuations: List and Delete follow continuation tokens
// across many pages.
func TestVisitContinuations(t *testing.T) {
	b, srv := newBackend(t)
	srv.SetPage(2)
	ctx := t.Context()
	var vs []retrieval.Version
	for i := range 9 {
		id := fmt.Sprintf("doc%d", i)
		vs = append(vs, retrieval.Version{DocID: id, Chunks: retrievaltest.DocChunks(id, 3, func(int) string { return "Heron." })})
	}
	if err := b.ReplaceBatch(ctx, "acme", vs); err != nil {
		t.Fatal(err)
	}
	p, err := b.List(ctx, "acme", retrieval.ListOptions{Limit: 4})
	if err != nil || p.Total != 9 || len(p.Documents) != 4 || p.Next != "doc3" || p.Documents[0].Chunks != 3 {
		t.Fatalf("List = %+v, %v", p, err)
	}
	if n, err := b.Delete(ctx, "acme", "doc4"); err != nil || n != 3 {
		t.Errorf("Delete = %d, %v", n, err)
	}
	if n, _ := b.Count(ctx, "acme"); n != 24 {
		t.Errorf("Count = %d, want 24", n)
	}
}

func TestDocumentErrors(t *testing.T) {
	b, srv := newBackend(t, func(c *vespa.Config) { c.MaxRetries = -1 })
	ctx := t.Context()
	srv.FailFeeds(vespatest.Fault{Status: http.StatusBadRequest, Message: "Failed to parse document selection string"})
	_, err := b.List(ctx, "acme", retrieval.ListOptions{})
	var ve *vespa.Error
	if !errors.As(err, &ve) || ve.Op != "visit" || ve.Status != 400 || !errors.Is(err, vespa.ErrQuery) {
		t.Errorf("List on a 400 = %v, want a visit *Error wrapping ErrQuery", err)
	}
	if _, err := b.Document(ctx, "acme", "bad\x01id"); !errors.Is(err, retrieval.ErrInvalidDocument) {
		t.Errorf("Document with a control character = %v, want ErrInvalidDocument", err)
	}
}
