package vespa_test

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/vespa"
	"github.com/agentbus/agentbus/retrieval/vespa/vespatest"
)

func lastQuery(t *testing.T, srv *vespatest.Server) map[string]any {
	t.Helper()
	qs := srv.Queries()
	if len(qs) == 0 {
		t.Fatal("no query reached Vespa")
	}
	return qs[len(qs)-1]
}

func TestSearchRequests(t *testing.T) {
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		profile string
		q       retrieval.Query
		yql     string
		ranking string
	}{
		{"bm25", retrieval.ProfileBM25, retrieval.Query{Text: "status report"},
			"select * from chunk_acme where userQuery()", "bm25"},
		{"vector", retrieval.ProfileVector, retrieval.Query{Text: "status report", K: 3},
			"select * from chunk_acme where ({targetHits:3}nearestNeighbor(embedding, q))", "semantic"},
		{"filters", retrieval.ProfileBM25, retrieval.Query{Text: "x", Filters: retrieval.Filters{
			From: day, To: day.Add(36 * time.Hour), Metadata: map[string]string{"team": "ops", "lang": "en"}}},
			`select * from chunk_acme where userQuery() and date >= 1709251200 and date <= 1709380800` +
				` and metadata contains sameElement(key contains "lang", value contains "en")` +
				` and metadata contains sameElement(key contains "team", value contains "ops")`, "bm25"},
		{"to only keeps undated out", retrieval.ProfileVector, retrieval.Query{Text: "x", Filters: retrieval.Filters{To: day}},
			"select * from chunk_acme where ({targetHits:10}nearestNeighbor(embedding, q)) and date >= -62135596800 and date <= 1709251200", "semantic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, srv := newBackend(t)
			if _, err := b.Search(t.Context(), "acme", tc.profile, tc.q); err != nil {
				t.Fatal(err)
			}
			req := lastQuery(t, srv)
			if req["yql"] != tc.yql {
				t.Errorf("yql\n got %q\nwant %q", req["yql"], tc.yql)
			}
			if req["ranking.profile"] != tc.ranking || req["hits"] != float64(tc.q.Limit()) || req["timeout"] != "5000ms" {
				t.Errorf("request %v: want ranking.profile %s, hits %d, timeout 5000ms", req, tc.ranking, tc.q.Limit())
			}
			_, hasVec := req["input.query(q)"]
			_, hasText := req["query"]
			if hasVec != (tc.profile == retrieval.ProfileVector) || hasText != (tc.profile == retrieval.ProfileBM25) {
				t.Errorf("request %v: vector queries send input.query(q), bm25 queries send query", req)
			}
		})
	}
}

// TestSearchTextNeverBecomesYQL sends query text full of YQL syntax: it
// must reach Vespa only as the "query" parameter, the YQL unchanged.
func TestSearchTextNeverBecomesYQL(t *testing.T) {
	b, srv := newBackend(t)
	if err := b.Index(t.Context(), "acme", retrievalChunks("The status of the report.", "Secret payroll data.")); err != nil {
		t.Fatal(err)
	}
	evil := `status") or true or ("x" contains "y` + "\" and sddocname contains \"chunk_globex\" -- select * from sources * where true; \\"
	hits, err := b.Search(t.Context(), "acme", retrieval.ProfileBM25, retrieval.Query{Text: evil})
	if err != nil {
		t.Fatal(err)
	}
	req := lastQuery(t, srv)
	if req["yql"] != "select * from chunk_acme where userQuery()" {
		t.Errorf("yql = %q: user text leaked into it", req["yql"])
	}
	if req["query"] != evil {
		t.Errorf("query = %q, want the text verbatim", req["query"])
	}
	// Only the chunk sharing a word with the text matches; "or true" did not
	// turn the query into match-all.
	if ids := ids(hits); !slices.Equal(ids, []string{"c-0#0"}) {
		t.Errorf("hits %v, want [c-0#0]", ids)
	}
}

func TestSearchMetadataFilterEscaping(t *testing.T) {
	b, srv := newBackend(t)
	odd := map[string]any{`we"ird\key`: `va"lue\ and "x" or true`}
	chunks := retrievalChunks("Filtered chunk.", "Other chunk.")
	chunks[0].Metadata = odd
	chunks[1].Metadata = map[string]any{`we"ird\key`: "plain"}
	if err := b.Index(t.Context(), "acme", chunks); err != nil {
		t.Fatal(err)
	}
	f := retrieval.Filters{Metadata: map[string]string{`we"ird\key`: `va"lue\ and "x" or true`}}
	for _, p := range b.Profiles() {
		hits, err := b.Search(t.Context(), "acme", p, retrieval.Query{Text: "chunk", Filters: f})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got := ids(hits); !slices.Equal(got, []string{"c-0#0"}) {
			t.Errorf("%s: hits %v, want exactly [c-0#0]", p, got)
		}
	}
	want := `metadata contains sameElement(key contains "we\"ird\\key", value contains "va\"lue\\ and \"x\" or true")`
	if yql, _ := lastQuery(t, srv)["yql"].(string); !strings.HasSuffix(yql, want) {
		t.Errorf("yql %q, want it to end in %q", yql, want)
	}

	n := len(srv.Queries())
	for _, bad := range []map[string]string{{"k": "a\nb"}, {"": "v"}, {"k\x00": "v"}, {"k": "\xff"}} {
		_, err := b.Search(t.Context(), "acme", retrieval.ProfileBM25, retrieval.Query{Text: "chunk", Filters: retrieval.Filters{Metadata: bad}})
		if !errors.Is(err, vespa.ErrInvalidFilter) {
			t.Errorf("filter %q: error = %v, want ErrInvalidFilter", bad, err)
		}
	}
	if len(srv.Queries()) != n {
		t.Error("an invalid filter reached Vespa")
	}
}

func TestSearchErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     vespatest.Fault
		status    int
		code      int
		timeout   bool
		inMessage string
	}{
		{"500 with root.errors", vespatest.Fault{Status: 500, Errors: []vespatest.QueryError{
			{Code: 18, Summary: "Internal server error.", Message: "Failed searching: NullPointerException"}}},
			500, 18, false, "NullPointerException"},
		{"500 without a body Vespa wrote", vespatest.Fault{Status: 500, Message: "<html>Internal Server Error</html>"},
			500, 0, false, "Internal Server Error"},
		{"timeout code 12", vespatest.Fault{Status: 504, Errors: []vespatest.QueryError{
			{Code: 12, Summary: "Timed out", Source: "agentbus_content", Message: "No time left after waiting for 5000ms to execute query"}}},
			504, 12, true, "No time left"},
		{"root.errors in a 200", vespatest.Fault{Errors: []vespatest.QueryError{
			{Code: 10, Summary: "Backend communication error", Message: "Connection failure on nodes with distribution-keys: 0"}}},
			200, 10, false, "distribution-keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, srv := newBackend(t)
			srv.FailQueries(tc.fault)
			hits, err := b.Search(t.Context(), "acme", retrieval.ProfileBM25, retrieval.Query{Text: "anything"})
			var ve *vespa.Error
			if !errors.As(err, &ve) || !errors.Is(err, vespa.ErrQuery) {
				t.Fatalf("Search = %v, %v; want an *Error wrapping ErrQuery", hits, err)
			}
			if ve.Status != tc.status || ve.Code != tc.code || ve.Timeout() != tc.timeout || !strings.Contains(ve.Message, tc.inMessage) {
				t.Errorf("error %+v: want status %d, code %d, timeout %v, message with %q", ve, tc.status, tc.code, tc.timeout, tc.inMessage)
			}
		})
	}
}

func TestSearchPartialCoverage(t *testing.T) {
	var logs bytes.Buffer
	b, srv := newBackend(t, func(c *vespa.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	texts := make([]string, 10)
	for i := range texts {
		texts[i] = "Gardening note about compost."
	}
	if err := b.Index(t.Context(), "acme", retrievalChunks(texts...)); err != nil {
		t.Fatal(err)
	}
	srv.FailQueries(vespatest.Fault{PartialPercent: 40})
	res, err := b.SearchWithCoverage(t.Context(), "acme", retrieval.ProfileBM25, retrieval.Query{Text: "compost"})
	if err != nil {
		t.Fatalf("partial coverage is not an error: %v", err)
	}
	if len(res.Hits) != 4 {
		t.Errorf("%d hits, want the 4 the degraded query found", len(res.Hits))
	}
	c := res.Coverage
	if !c.Partial() || c.Full || c.Percent != 40 || !slices.Equal(c.Reasons(), []string{"timeout"}) {
		t.Errorf("coverage %+v, want partial 40%% degraded by timeout", c)
	}
	if got, want := c.String(), "partial coverage: 40% of 4 documents (timeout)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if !strings.Contains(logs.String(), "partial coverage") || !strings.Contains(logs.String(), "tenant=acme") {
		t.Errorf("no warning logged: %q", logs.String())
	}

	// A full answer is not partial.
	res, err = b.SearchWithCoverage(t.Context(), "acme", retrieval.ProfileBM25, retrieval.Query{Text: "compost"})
	if err != nil || res.Coverage.Partial() || len(res.Hits) != 10 {
		t.Errorf("full search: %d hits, coverage %v, err %v", len(res.Hits), res.Coverage, err)
	}
}

// TestCoverageRecorderThroughEnsemble: a caller searching through the
// retrieval.Backend interface still learns which profile was partial.
func TestCoverageRecorderThroughEnsemble(t *testing.T) {
	b, srv := newBackend(t)
	if err := b.Index(t.Context(), "acme", retrievalChunks("Compost heap.", "Seedling tray.", "Compost bin.", "Rake.")); err != nil {
		t.Fatal(err)
	}
	srv.FailQueries(vespatest.Fault{PartialPercent: 50})
	ctx, rec := vespa.WithCoverageRecorder(t.Context())
	res, err := retrieval.Ensemble(ctx, b, "acme", nil, retrieval.Query{Text: "compost"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Degraded() {
		t.Errorf("ensemble: %d hits, degraded %v; want hits and no failed profile", len(res.Hits), res.Degraded())
	}
	reports := rec.Reports()
	if len(reports) != 2 {
		t.Fatalf("%d coverage reports, want one per profile: %+v", len(reports), reports)
	}
	partial := rec.Partial()
	if len(partial) != 1 || partial[0].Tenant != "acme" || partial[0].Coverage.Percent != 50 {
		t.Errorf("partial reports %+v, want exactly one at 50%%", partial)
	}
}

func TestSearchBlankTextAsksNothing(t *testing.T) {
	b, srv := newBackend(t)
	for _, p := range b.Profiles() {
		hits, err := b.Search(t.Context(), "acme", p, retrieval.Query{Text: "  "})
		if err != nil || len(hits) != 0 {
			t.Errorf("%s: %v, %v; want no hits", p, hits, err)
		}
	}
	if n := len(srv.Queries()); n != 0 {
		t.Errorf("%d queries sent for blank text", n)
	}
}

func ids(hits []retrieval.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}
