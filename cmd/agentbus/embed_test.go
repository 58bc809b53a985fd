package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/llm"
)

// embeddingsServer speaks the OpenAI embeddings protocol (POST
// /v1/embeddings), embedding with the local embedder so that similar texts
// get similar vectors; it counts the texts it embedded for model.
func embeddingsServer(t *testing.T, model string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var texts atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != model {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		vecs, _ := llm.LocalEmbedder{Dim: 64}.Embed(r.Context(), req.Input)
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: model}
		for i, v := range vecs {
			out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: v})
		}
		texts.Add(int64(len(req.Input)))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s, &texts
}

// TestEmbeddingsEndpoint: with --embed-url, `index` embeds the documents
// and `serve`'s search agent embeds the queries through an OpenAI-compatible
// embeddings endpoint, names it as its embedder, and answers from the
// documents so indexed.
func TestEmbeddingsEndpoint(t *testing.T) {
	srv, texts := embeddingsServer(t, "test-embed")
	dir, docs := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(docs, "tides.md"), []byte("# Tides\n\nThe tides of the Atlantic rise twice a day because of the moon.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	embed := []string{"--embed-url", srv.URL + "/v1", "--embed-model", "test-embed"}
	code, out, stderr := cli(t, append([]string{"index", "--data", dir}, append(embed, docs)...)...)
	if code != exitCompleted || !strings.Contains(out, "test-embed at") {
		t.Fatalf("index: exit %d, backend not named after the endpoint:\n%s%s", code, out, stderr)
	}
	indexed := texts.Load()
	if indexed == 0 {
		t.Fatal("index embedded nothing through the endpoint")
	}

	info := startServeWith(t, serveFlags{data: dir, eventsMaxAge: time.Hour,
		search: backendFlags{backend: "embedded", embedURL: srv.URL + "/v1", embedModel: "test-embed"}}, time.Minute).info
	code, out, stderr = cli(t, "ask", "--url", info.HTTPURL, "--json", "why do the tides rise twice a day?")
	if code != exitCompleted || !strings.Contains(out, "test-embed at") || !strings.Contains(out, `"doc_id":"tides.md"`) {
		t.Fatalf("ask: exit %d; want the search backend named after the endpoint and a citation of tides.md:\n%s%s", code, out, stderr)
	}
	if texts.Load() == indexed {
		t.Fatal("the query was not embedded through the endpoint")
	}
}
