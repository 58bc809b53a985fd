package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/agents/ingest"
	"github.com/agentbus/agentbus/agents/search"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/ingest/ingesttest"
)

// docStack is a gateway with an orchestrator and a worker that serves
// ingest (and echo) on an embedded index the test can search.
type docStack struct {
	*stack
	index *embedded.Index
}

func startDocStack(t testing.TB, tweak ...func(*gateway.Config)) *docStack {
	t.Helper()
	return startDocStackN(t, 1, tweak...)
}

// startDocStackN is startDocStack with n workers serving ingest on the
// one index.
func startDocStackN(t testing.TB, n int, tweak ...func(*gateway.Config)) *docStack {
	t.Helper()
	env := bustest.New(t)
	ix, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	ing, err := ingest.New(ingest.Config{Bus: env.Bus, Store: ix})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := ing.Serve(ctx, env.Bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	for range n {
		se, err := search.New(search.Config{Backend: ix})
		if err != nil {
			t.Fatal(err)
		}
		co, err := compose.New(compose.Config{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{echo.Agent{}, ing, se, co}, Logger: log, Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	return &docStack{stack: startGateway(t, env, tweak...), index: ix}
}

// multipartBody is a form with the files (name → content) and fields.
func multipartBody(t testing.TB, files [][2]string, fields map[string]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		fw, err := mw.CreateFormFile("file", f[0])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write([]byte(f[1]))
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.FormDataContentType()
}

// uploaded is the 202 answer to POST /v1/documents.
type uploaded struct {
	WorkflowID string `json:"workflow_id"`
	EventsURL  string `json:"events_url"`
	UploadID   string `json:"upload_id"`
	Files      []struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
	} `json:"files"`
}

// upload posts body and waits for its ingest workflow to end; it returns
// the answer and the ingest steps' outputs.
func (s *docStack) upload(t testing.TB, body []byte, contentType string) (uploaded, []ingest.Output) {
	t.Helper()
	up, outs, _ := s.uploadBy(t, body, contentType)
	return up, outs
}

// uploadBy is upload that also returns how many steps each worker ran.
func (s *docStack) uploadBy(t testing.TB, body []byte, contentType string) (uploaded, []ingest.Output, map[string]int) {
	t.Helper()
	r := s.mustDo(t, http.MethodPost, "/v1/documents", body, "Content-Type", contentType)
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST /v1/documents: %d %s", r.Status, r.Body)
	}
	var up uploaded
	if err := json.Unmarshal(r.Body, &up); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, frames, err := s.follow(ctx, up.EventsURL)
	if err != nil {
		t.Fatal(err)
	}
	if last := frames[len(frames)-1]; last.Type != "complete" {
		t.Fatalf("ingest workflow ended %s: %s", last.Type, last.Data)
	}
	st := s.state(t, "/v1/workflows/"+up.WorkflowID)
	var outs []ingest.Output
	workers := map[string]int{}
	steps, _ := st["tasks"].(map[string]any)
	for id, v := range steps {
		task := v.(map[string]any)
		workers[fmt.Sprint(task["worker"])]++
		raw, _ := json.Marshal(task["output"])
		var o ingest.Output
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatalf("step %s output: %v: %s", id, err, raw)
		}
		outs = append(outs, o)
	}
	return up, outs, workers
}

func (s *docStack) search(t testing.TB, text string) []retrieval.Hit {
	t.Helper()
	hits, err := s.index.Search(context.Background(), gateway.DefaultTenant, retrieval.ProfileBM25, retrieval.Query{Text: text, K: 5})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func TestUploadEveryFormatThenDeleteAndReplace(t *testing.T) {
	s := startDocStack(t)
	files := [][2]string{
		{"notes.md", "# Notes\n\nThe heron migrates in the month of quintember.\n"},
		{"report.pdf", string(ingesttest.PDF("Page one is an introduction.", "Page two: the aquifer holds 812 megalitres.", "Page three concludes."))},
		{"plan.docx", string(ingesttest.DOCX("Plan", ingesttest.Para{Style: "Heading1", Text: "Budget"}, ingesttest.Para{Text: "The zeppelin hangar costs nine florins."}))},
		{"stock.xlsx", string(ingesttest.XLSX(ingesttest.Sheet{Name: "Parts", Rows: [][]any{{"part", "count"}, {"sprocket", 3}, {"flywheel", 77}}}))},
		{"page.html", string(ingesttest.HTML("Page", [2]string{"Intro", "The lighthouse keeper feeds a marmoset."}))},
		{"broken.pdf", "%PDF-1.4 this is not a PDF at all"},
		{"latin1.md", "# Caf\xe9\n\nNot UTF-8.\n"},
		{"bomb.docx", string(ingesttest.ZipDeclaring(1<<40, 1<<20))},
	}
	body, ct := multipartBody(t, files, map[string]string{"metadata": `{"team":"docs"}`})
	up, outs := s.upload(t, body, ct)
	if len(up.Files) != len(files) {
		t.Fatalf("answer lists %d files, want %d", len(up.Files), len(files))
	}
	var indexed, problems []string
	for _, o := range outs {
		for _, ix := range o.Indexed {
			indexed = append(indexed, ix.ID)
		}
		for _, p := range o.Problems {
			problems = append(problems, p.File+": "+p.Code)
		}
	}
	slices.Sort(problems)
	if len(indexed) != 5 || fmt.Sprint(problems) != "[bomb.docx: too_large broken.pdf: corrupt latin1.md: invalid_utf8]" {
		t.Fatalf("indexed %v, problems %v: want the 5 good files indexed, and the zip bomb, the broken PDF and the Latin-1 file problems", indexed, problems)
	}
	for q, doc := range map[string]string{"quintember heron": "notes.md", "aquifer megalitres": "report.pdf",
		"zeppelin hangar florins": "plan.docx", "flywheel": "stock.xlsx", "marmoset lighthouse": "page.html"} {
		hits := s.search(t, q)
		if len(hits) == 0 || hits[0].DocID != doc {
			t.Errorf("search %q: %v, want %s first", q, hitDocs(hits), doc)
			continue
		}
		if doc == "report.pdf" && fmt.Sprint(hits[0].Metadata["page"]) != "2" {
			t.Errorf("the PDF fact's chunk has page %v, want 2", hits[0].Metadata["page"])
		}
		if doc == "stock.xlsx" && hits[0].Metadata["sheet"] != "Parts" {
			t.Errorf("the sheet fact's chunk has sheet %v, want Parts", hits[0].Metadata["sheet"])
		}
		if hits[0].Metadata["team"] != "docs" {
			t.Errorf("%s: chunk metadata %v lacks the upload's team=docs", doc, hits[0].Metadata)
		}
	}

	// An answer cites the PDF's page and the sheet's rows.
	for q, want := range map[string]compose.Citation{
		"how much does the aquifer hold": {DocID: "report.pdf", Page: 2},
		"how many flywheel parts":        {DocID: "stock.xlsx", Sheet: "Parts", Rows: "2-3"},
	} {
		steps := map[string]any{"steps": []map[string]any{{"id": "search", "capability": "search"},
			{"id": "summarize", "capability": "summarize", "depends_on": []string{"search"}}}}
		sub := s.mustSubmit(t, map[string]any{"query": q, "plan": steps})
		_, frames := s.mustFollow(t, sub.EventsURL)
		last := frames[len(frames)-1]
		var res struct {
			Result struct {
				Citations []compose.Citation `json:"citations"`
			} `json:"result"`
		}
		_ = json.Unmarshal(last.Data, &res)
		found := false
		for _, c := range res.Result.Citations {
			found = found || (c.DocID == want.DocID && c.Page == want.Page && c.Sheet == want.Sheet && c.Rows == want.Rows)
		}
		if last.Type != "complete" || !found {
			t.Errorf("ask %q: %s %+v, want a citation of %+v", q, last.Type, res.Result.Citations, want)
		}
	}

	// Listing and reading.
	r := s.mustDo(t, http.MethodGet, "/v1/documents?limit=2", nil)
	var page retrieval.DocumentPage
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &page) != nil || page.Total != 5 || len(page.Documents) != 2 || page.Next == "" {
		t.Fatalf("GET /v1/documents?limit=2: %d %s", r.Status, r.Body)
	}
	r = s.mustDo(t, http.MethodGet, "/v1/documents/report.pdf", nil)
	var info retrieval.DocumentInfo
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &info) != nil || info.Chunks < 1 || info.ID != "report.pdf" {
		t.Fatalf("GET /v1/documents/report.pdf: %d %s", r.Status, r.Body)
	}

	// Delete: the fact is gone, the document unknown.
	r = s.mustDo(t, http.MethodDelete, "/v1/documents/report.pdf", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"chunks": `) {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if hits := s.search(t, "aquifer megalitres"); len(hits) > 0 && hits[0].DocID == "report.pdf" {
		t.Fatalf("the deleted PDF is still found: %v", hitDocs(hits))
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r := s.mustDo(t, m, "/v1/documents/report.pdf", nil); r.Status != http.StatusNotFound {
			t.Fatalf("%s of a deleted document: %d %s, want 404", m, r.Status, r.Body)
		}
	}

	// Re-upload a shorter notes.md: its old chunks are gone.
	long := "# Notes\n\n" + strings.Repeat("The heron migrates in the month of quintember. ", 80)
	body, ct = multipartBody(t, [][2]string{{"notes.md", long}}, nil)
	s.upload(t, body, ct)
	before := docChunks(t, s, "notes.md")
	body, ct = multipartBody(t, [][2]string{{"notes.md", "# Notes\n\nThe heron now stays home.\n"}}, nil)
	s.upload(t, body, ct)
	if after := docChunks(t, s, "notes.md"); before < 2 || after != 1 {
		t.Fatalf("notes.md had %d chunks, has %d after a shorter re-upload, want >1 then 1", before, after)
	}
	if hits := s.search(t, "quintember"); len(hits) > 0 {
		t.Fatalf("a stale chunk of the old notes.md is found: %v", hitDocs(hits))
	}
}

func docChunks(t testing.TB, s *docStack, id string) int {
	t.Helper()
	r := s.mustDo(t, http.MethodGet, "/v1/documents/"+id, nil)
	var info retrieval.DocumentInfo
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &info) != nil {
		t.Fatalf("GET /v1/documents/%s: %d %s", id, r.Status, r.Body)
	}
	return info.Chunks
}

func hitDocs(hits []retrieval.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.DocID
	}
	return out
}

// TestUploadScalesOut shares a 200-file upload between two workers:
// every file is indexed once, and both took steps.
func TestUploadScalesOut(t *testing.T) {
	s := startDocStackN(t, 2, func(c *gateway.Config) { c.Documents.FilesPerStep = 5 })
	var files [][2]string
	for i := range 200 {
		files = append(files, [2]string{fmt.Sprintf("doc-%03d.md", i), fmt.Sprintf("# Doc %d\n\nFact number %d is about token%d.\n", i, i, i)})
	}
	body, ct := multipartBody(t, files, nil)
	_, outs, workers := s.uploadBy(t, body, ct)
	seen := map[string]int{}
	for _, o := range outs {
		for _, ix := range o.Indexed {
			seen[ix.ID]++
		}
	}
	for _, f := range files {
		if seen[f[0]] != 1 {
			t.Errorf("%s indexed %d times, want once", f[0], seen[f[0]])
		}
	}
	if len(outs) != 40 || len(workers) != 2 {
		t.Fatalf("%d steps over workers %v: want 40 steps shared by 2 workers", len(outs), workers)
	}
	if r := s.mustDo(t, http.MethodGet, "/v1/documents?limit=1", nil); !strings.Contains(string(r.Body), `"total": 200`) {
		t.Fatalf("GET /v1/documents: %s, want a total of 200", r.Body)
	}
}

func TestUploadRecordsAsJSONAndJSONL(t *testing.T) {
	s := startDocStack(t)
	recs := `[{"id":"r1","title":"One","text":"The okapi eats leaves."},{"id":"r2","text":"The quokka smiles."}]`
	s.upload(t, []byte(recs), "application/json")
	jsonl := "{\"id\":\"r3\",\"text\":\"The axolotl regrows limbs.\"}\nnot json\n{\"id\":\"r4\"}\n"
	_, outs := s.upload(t, []byte(jsonl), "application/x-ndjson")
	var lines []int
	for _, o := range outs {
		for _, p := range o.Problems {
			lines = append(lines, p.Line)
		}
	}
	if fmt.Sprint(lines) != "[2 3]" {
		t.Fatalf("JSONL problems at lines %v, want [2 3]", lines)
	}
	for q, doc := range map[string]string{"okapi": "r1", "quokka": "r2", "axolotl": "r3"} {
		if hits := s.search(t, q); len(hits) == 0 || hits[0].DocID != doc {
			t.Errorf("search %q: %v, want %s", q, hitDocs(hits), doc)
		}
	}
}

func TestUploadRefusals(t *testing.T) {
	s := startDocStack(t, func(c *gateway.Config) { c.Documents.MaxUploadBytes = 64 << 10 })
	big, ct := multipartBody(t, [][2]string{{"a.md", "# A\n\nsmall"}, {"big.md", strings.Repeat("x", 100<<10)}}, nil)
	cases := []struct {
		name, ct string
		body     []byte
		status   int
		want     string
	}{
		{"over the limit", ct, big, http.StatusRequestEntityTooLarge, "exceeds 65536 bytes"},
		{"plain text", "text/plain", []byte("hello"), http.StatusUnsupportedMediaType, "multipart/form-data"},
		{"record without text", "application/json", []byte(`[{"id":"a","text":"x"},{"id":"b"}]`), http.StatusBadRequest, `"pointer": "/1/text"`},
		{"record without id", "application/json", []byte(`{"text":"x"}`), http.StatusBadRequest, `"pointer": "/id"`},
		{"not JSON", "application/json", []byte(`{"id":`), http.StatusBadRequest, "want a record"},
		{"no files", "multipart/form-data; boundary=x", []byte("--x--\r\n"), http.StatusBadRequest, "no documents"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodPost, "/v1/documents", c.body, "Content-Type", c.ct)
			if r.Status != c.status || !strings.Contains(string(r.Body), c.want) {
				t.Fatalf("%d %s, want %d with %q", r.Status, r.Body, c.status, c.want)
			}
		})
	}
	// Nothing of a refused upload stays in the object store.
	left, err := s.env.Bus.ListUploads(context.Background(), gateway.DefaultTenant)
	if err != nil || len(left) != 0 {
		t.Fatalf("uploads left behind by refused requests: %v %v", left, err)
	}
	// The gateway still serves.
	body, ct := multipartBody(t, [][2]string{{"ok.md", "# OK\n\nThe gateway still works."}}, nil)
	s.upload(t, body, ct)
}

func TestDocumentsWithoutIngestAgent(t *testing.T) {
	s := startStack(t)
	r := s.mustDo(t, http.MethodGet, "/v1/documents", nil)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "ingest") {
		t.Fatalf("GET /v1/documents with no ingest agent: %d %s, want 503 naming ingest", r.Status, r.Body)
	}
}
