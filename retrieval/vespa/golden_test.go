package vespa

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
)

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGoldenResults parses recorded Query API answers in Vespa's default
// JSON result format into hits, coverage and errors.
func TestGoldenResults(t *testing.T) {
	for _, tc := range []struct {
		file     string
		status   int
		hits     []retrieval.Hit
		coverage Coverage
		total    int64
		err      *Error
	}{
		{
			file: "result.json", status: 200, total: 2,
			coverage: Coverage{Percent: 100, Documents: 1206, Full: true, Nodes: 2, Results: 2, ResultsFull: 2},
			hits: []retrieval.Hit{
				{
					ID: "handbook#3", DocID: "handbook", Title: "Travel policy",
					Text:     "Economy class is booked for flights under six hours.",
					Source:   "handbook.md",
					Metadata: map[string]any{"lang": "en", "pages": float64(12), "team": "finance"},
					Score:    12.837465281634712,
				},
				{
					// No id field: taken from the document id; metadata in
					// the older [{key, value}] rendering.
					ID: "expenses#0", DocID: "expenses", Text: "Expense reports are due monthly.",
					Metadata: map[string]any{"team": "finance"},
					Score:    3.2104862201377343,
				},
			},
		},
		{
			file: "result_partial.json", status: 200, total: 57,
			coverage: Coverage{Percent: 47, Documents: 5400, Full: false, Nodes: 1, Results: 2, ResultsFull: 1,
				Degraded: &Degraded{Timeout: true}},
			hits: []retrieval.Hit{{
				ID: "runbook#7", DocID: "runbook", Title: "Failover",
				Text:   "Promote the replica, then repoint the load balancer.",
				Source: "runbook.md", Score: 0.6180339887498949,
			}},
		},
		{
			file: "result_error.json", status: 504,
			err: &Error{Op: "search", DocType: "chunk_acme", Status: 504, Code: 12, Summary: "Timed out",
				Message: "No time left after waiting for 5000ms to execute query"},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p, err := parseResult("search", "chunk_acme", tc.status, readGolden(t, tc.file))
			if tc.err != nil {
				var ve *Error
				if !errors.As(err, &ve) || !reflect.DeepEqual(ve, tc.err) {
					t.Fatalf("error = %#v, want %#v", err, tc.err)
				}
				if !ve.Timeout() || !errors.Is(err, ErrQuery) {
					t.Errorf("%v: want a timeout wrapping ErrQuery", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.hits, tc.hits) {
				t.Errorf("hits\n got %#v\nwant %#v", p.hits, tc.hits)
			}
			if !reflect.DeepEqual(p.coverage, tc.coverage) {
				t.Errorf("coverage %#v, want %#v", p.coverage, tc.coverage)
			}
			if p.total != tc.total {
				t.Errorf("totalCount %d, want %d", p.total, tc.total)
			}
			if p.coverage.Partial() != (tc.file == "result_partial.json") {
				t.Errorf("Partial() = %v", p.coverage.Partial())
			}
		})
	}
}

// TestGoldenDocumentAnswers feeds one chunk against a server answering
// with recorded Document v1 bodies.
func TestGoldenDocumentAnswers(t *testing.T) {
	for _, tc := range []struct {
		file   string
		status int
		want   string // Vespa's message; "" for success
	}{
		{"document_ok.json", 200, ""},
		{"document_error.json", 400, "No field 'embeding' in the structure of type 'chunk_acme'"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body := readGolden(t, tc.file)
			var path string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path = r.URL.EscapedPath()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			b, err := New(Config{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			err = b.Index(t.Context(), "acme", []retrieval.Chunk{{ID: "handbook#3", DocID: "handbook", Text: "Economy class."}})
			if want := "/document/v1/agentbus/chunk_acme/docid/handbook%233"; path != want {
				t.Errorf("request path %q, want %q", path, want)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ve *Error
			if !errors.As(err, &ve) || ve.Message != tc.want || ve.Status != tc.status || ve.ChunkID != "handbook#3" {
				t.Fatalf("error = %v, want %d %q for chunk handbook#3", err, tc.status, tc.want)
			}
		})
	}
}

func FuzzParseResult(f *testing.F) {
	for _, name := range []string{"result.json", "result_partial.json", "result_error.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(200, data)
	}
	f.Add(500, []byte("<html>oops</html>"))
	f.Add(200, []byte(`{"root":{"children":[{"id":"x","fields":{"metadata":7}}]}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		p, err := parseResult("search", "chunk_acme", status, body)
		if err != nil {
			if !errors.Is(err, ErrQuery) && !errors.Is(err, ErrResponse) {
				t.Fatalf("error %v wraps neither ErrQuery nor ErrResponse", err)
			}
			return
		}
		for _, h := range p.hits {
			if h.ID == "" {
				t.Fatalf("hit without an id: %+v", h)
			}
		}
	})
}
