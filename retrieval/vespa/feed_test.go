package vespa_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/vespa"
	"github.com/agentbus/agentbus/retrieval/vespa/vespatest"
)

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  vespa.Config
		ok   bool
	}{
		{"defaults", vespa.Config{URL: "http://localhost:8080"}, true},
		{"https with path", vespa.Config{URL: "https://vespa.example:443/"}, true},
		{"no URL", vespa.Config{}, false},
		{"not http", vespa.Config{URL: "ftp://x"}, false},
		{"no host", vespa.Config{URL: "http://"}, false},
		{"query in URL", vespa.Config{URL: "http://x/?a=b"}, false},
		{"bad schema", vespa.Config{URL: "http://x", Schema: "chunk-x"}, false},
		{"bad namespace", vespa.Config{URL: "http://x", Namespace: "a/b"}, false},
		{"negative timeout", vespa.Config{URL: "http://x", Timeout: -time.Second}, false},
		{"negative concurrency", vespa.Config{URL: "http://x", FeedConcurrency: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vespa.New(tc.cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("New(%+v) error = %v, want ok=%v", tc.cfg, err, tc.ok)
			}
			if err != nil && !errors.Is(err, vespa.ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
		})
	}
}

func TestName(t *testing.T) {
	b, err := vespa.New(vespa.Config{URL: "http://vespa.internal:8080"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Name(), "vespa at vespa.internal:8080 (local-hash-256)"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
}

func TestIndexStoresSchemaFields(t *testing.T) {
	b, srv := newBackend(t)
	date := time.Date(2024, 5, 1, 12, 30, 0, 0, time.UTC)
	c := retrieval.Chunk{
		ID: "dir/a b?c#2", DocID: "dir/a b?c", Title: "T", Text: "Body text.", Source: "a.md",
		Metadata: map[string]any{"team": "finance", "pages": 12, "draft": false},
		Date:     date,
	}
	if err := b.Index(t.Context(), "acme-eu", []retrieval.Chunk{c}); err != nil {
		t.Fatal(err)
	}
	doc, ok := srv.Doc("chunk_acme_heu", c.ID)
	if !ok {
		t.Fatalf("chunk %q not stored under chunk_acme_heu with its id intact", c.ID)
	}
	if doc["id"] != c.ID || doc["doc_id"] != c.DocID || doc["title"] != "T" || doc["text"] != c.Text || doc["source"] != "a.md" {
		t.Errorf("stored fields %v", doc)
	}
	if got := doc["date"]; got != float64(date.Unix()) {
		t.Errorf("date = %v, want %d", got, date.Unix())
	}
	meta, _ := doc["metadata"].(map[string]any)
	if meta["team"] != "finance" || meta["pages"] != "12" || meta["draft"] != "false" {
		t.Errorf("metadata = %v, want every value in its string form", meta)
	}
	if got := doc["metadata_json"]; got != `{"draft":false,"pages":12,"team":"finance"}` {
		t.Errorf("metadata_json = %v", got)
	}
	if emb, _ := doc["embedding"].([]float64); len(emb) != vespatest.Dim {
		t.Errorf("embedding has %d values, want %d", len(emb), vespatest.Dim)
	}
	// Hits carry the metadata with its JSON types back.
	hits, err := b.Search(t.Context(), "acme-eu", retrieval.ProfileBM25, retrieval.Query{Text: "body"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("Search: %v, %v", hits, err)
	}
	if hits[0].Metadata["pages"] != float64(12) || hits[0].Metadata["draft"] != false {
		t.Errorf("hit metadata %v lost its types", hits[0].Metadata)
	}
}

func TestIndexRetriesOverload(t *testing.T) {
	for _, status := range []int{429, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			b, srv := newBackend(t)
			srv.FailFeeds(vespatest.Fault{Status: status, Message: "Rejecting execution due to overload", Times: 2})
			if err := b.Index(t.Context(), "acme", retrievalChunks("Retried chunk.")); err != nil {
				t.Fatalf("Index after %d twice: %v", status, err)
			}
			if got := srv.Feeds(); got != 3 {
				t.Errorf("%d feed requests, want 3 (two refused, one accepted)", got)
			}
			if _, ok := srv.Doc("chunk_acme", "c-0#0"); !ok {
				t.Error("chunk not stored after the retry")
			}
		})
	}
}

func TestIndexGivesUpAfterMaxRetries(t *testing.T) {
	b, srv := newBackend(t, func(c *vespa.Config) { c.MaxRetries = 2 })
	srv.FailFeeds(vespatest.Fault{Status: 429, Message: "Rejecting execution due to overload", Times: 100})
	err := b.Index(t.Context(), "acme", retrievalChunks("Never accepted."))
	var ve *vespa.Error
	if !errors.As(err, &ve) || ve.Status != 429 || ve.ChunkID != "c-0#0" || !errors.Is(err, vespa.ErrFeed) {
		t.Fatalf("error = %v, want a 429 *Error for chunk c-0#0 wrapping ErrFeed", err)
	}
	if !ve.Retryable() {
		t.Error("a 429 is not reported retryable")
	}
	if got := srv.Feeds(); got != 3 {
		t.Errorf("%d feed requests, want 3 (1 + MaxRetries)", got)
	}
}

func TestIndexRetryHonoursContext(t *testing.T) {
	b, srv := newBackend(t, func(c *vespa.Config) { c.RetryBackoff = time.Hour })
	srv.FailFeeds(vespatest.Fault{Status: 503, Times: 100})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := b.Index(ctx, "acme", retrievalChunks("Waiting."))
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, vespa.ErrFeed) {
		t.Fatalf("error = %v, want ErrFeed and context.DeadlineExceeded", err)
	}
}

func TestIndexReportsEachFailedChunk(t *testing.T) {
	b, srv := newBackend(t, func(c *vespa.Config) { c.FeedConcurrency = 1 })
	msg := "No field 'embeding' in the structure of type 'chunk_acme'"
	srv.FailFeeds(vespatest.Fault{Status: 400, Message: msg})
	err := b.Index(t.Context(), "acme", retrievalChunks("First.", "Second.", "Third."))
	var ve *vespa.Error
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want an *Error", err)
	}
	if ve.Status != 400 || ve.Message != msg || ve.ChunkID != "c-0#0" || ve.DocType != "chunk_acme" {
		t.Errorf("error %+v, want 400 for chunk c-0#0 with Vespa's message", ve)
	}
	if !strings.Contains(err.Error(), `chunk "c-0#0"`) || !strings.Contains(err.Error(), msg) {
		t.Errorf("message %q names neither the chunk nor Vespa's reason", err)
	}
	for _, id := range []string{"c-1#0", "c-2#0"} {
		if _, ok := srv.Doc("chunk_acme", id); !ok {
			t.Errorf("%s not fed: one failure must not stop the others", id)
		}
	}
}

func TestIndexUndeployedTenant(t *testing.T) {
	b, srv := newBackend(t)
	srv.Deploy("chunk_acme")
	err := b.Index(t.Context(), "globex", retrievalChunks("Nowhere to go."))
	var ve *vespa.Error
	if !errors.As(err, &ve) || ve.Status != 400 || !strings.Contains(ve.Message, "chunk_globex") {
		t.Fatalf("error = %v, want Vespa's 400 naming chunk_globex", err)
	}
	_, err = b.Count(t.Context(), "globex")
	if !errors.As(err, &ve) || ve.Code != vespa.CodeInvalidQueryParameter || !errors.Is(err, vespa.ErrQuery) {
		t.Fatalf("Count error = %v, want code 4 wrapping ErrQuery", err)
	}
}

func TestIndexRejectsMixedDimensions(t *testing.T) {
	b, srv := newBackend(t)
	chunks := retrievalChunks("One.", "Two.")
	chunks[0].Vector = make([]float32, 256)
	chunks[1].Vector = make([]float32, 3)
	if err := b.Index(t.Context(), "acme", chunks); !errors.Is(err, retrieval.ErrInvalidDocument) {
		t.Fatalf("error = %v, want ErrInvalidDocument", err)
	}
	if srv.Feeds() != 0 {
		t.Errorf("%d feeds for a rejected batch", srv.Feeds())
	}
}

func retrievalChunks(texts ...string) []retrieval.Chunk {
	out := make([]retrieval.Chunk, len(texts))
	for i, text := range texts {
		id := fmt.Sprintf("c-%d", i)
		out[i] = retrieval.Chunk{ID: id + "#0", DocID: id, Text: text}
	}
	return out
}

// TestIndexBoundsConcurrency: Index keeps at most FeedConcurrency feeds in
// flight, and uses them. The server holds each request until more than
// FeedConcurrency are in flight (which must not happen) or 200ms have
// passed, so every wave of feeds is seen whole.
func TestIndexBoundsConcurrency(t *testing.T) {
	const limit = 3
	var mu sync.Mutex
	inFlight, peak := 0, 0
	over := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		if inFlight > limit {
			once.Do(func() { close(over) })
		}
		mu.Unlock()
		select {
		case <-over:
		case <-time.After(200 * time.Millisecond):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"pathId":%q,"id":"x"}`, r.URL.EscapedPath())
	}))
	defer srv.Close()
	b, err := vespa.New(vespa.Config{URL: srv.URL, FeedConcurrency: limit})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 2*limit)
	for i := range texts {
		texts[i] = "Chunk text."
	}
	if err := b.Index(t.Context(), "acme", retrievalChunks(texts...)); err != nil {
		t.Fatal(err)
	}
	if peak != limit {
		t.Errorf("peak of %d feeds in flight, want FeedConcurrency = %d", peak, limit)
	}
}
