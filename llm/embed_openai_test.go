package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/llm"
)

// embedRequest is what an OpenAI-compatible server reads from
// POST /v1/embeddings.
type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	auth           string
}

type embedServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []embedRequest
}

// newEmbedServer speaks the embeddings protocol; answer returns the status
// and the raw body.
func newEmbedServer(t *testing.T, answer func(r embedRequest) (int, string)) *embedServer {
	t.Helper()
	s := &embedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
			return
		}
		var req embedRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		req.auth = r.Header.Get("Authorization")
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		status, body := answer(req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}

// vectorsFor answers every input with [len(text), 1, 0, …] of dimension
// dim, listed in reverse order so that the client must sort by index.
func vectorsFor(req embedRequest, dim int) string {
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	var data []item
	for i := len(req.Input) - 1; i >= 0; i-- {
		v := make([]float64, dim)
		v[0], v[1] = float64(len(req.Input[i])), 1
		data = append(data, item{"embedding", i, v})
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": data, "model": req.Model})
	return string(b)
}

func newEmbedder(t *testing.T, url string, mutate func(*llm.OpenAIEmbedderConfig)) *llm.OpenAIEmbedder {
	t.Helper()
	cfg := llm.OpenAIEmbedderConfig{BaseURL: url + "/v1", Model: "embed-small", APIKey: "sk-secret"}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := llm.NewOpenAIEmbedder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestOpenAIEmbedderSpeaksTheProtocol(t *testing.T) {
	srv := newEmbedServer(t, func(r embedRequest) (int, string) { return 200, vectorsFor(r, 4) })
	e := newEmbedder(t, srv.URL, nil)
	texts := []string{"a", "bbb", "cc"}
	vecs, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		// [n, 1, 0, 0] normalised: v[0] = n/sqrt(n²+1).
		n := float64(len(texts[i]))
		if want := n / math.Sqrt(n*n+1); math.Abs(float64(v[0])-want) > 1e-6 {
			t.Errorf("vector %d = %v, want v[0] = %g (ordered by index, normalised)", i, v, want)
		}
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Errorf("vector %d has squared norm %g, want 1", i, norm)
		}
	}
	req := srv.requests[0]
	if req.Model != "embed-small" || req.EncodingFormat != "float" || strings.Join(req.Input, ",") != "a,bbb,cc" {
		t.Errorf("request = %+v", req)
	}
	if req.auth != "Bearer sk-secret" {
		t.Errorf("Authorization = %q", req.auth)
	}
	if got, want := e.Name(), "embed-small at "+strings.TrimPrefix(srv.URL, "http://"); got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	if vecs, err := e.Embed(t.Context(), nil); err != nil || len(vecs) != 0 || len(srv.requests) != 1 {
		t.Errorf("Embed(nil) = %v, %v after %d requests, want nothing and no request", vecs, err, len(srv.requests))
	}
}

func TestOpenAIEmbedderBatches(t *testing.T) {
	srv := newEmbedServer(t, func(r embedRequest) (int, string) { return 200, vectorsFor(r, 3) })
	e := newEmbedder(t, srv.URL, func(c *llm.OpenAIEmbedderConfig) { c.BatchSize = 2 })
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vecs, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, r := range srv.requests {
		sizes = append(sizes, len(r.Input))
	}
	if fmt.Sprint(sizes) != "[2 2 1]" {
		t.Errorf("batch sizes %v, want [2 2 1]", sizes)
	}
	for i, v := range vecs {
		n := float64(i + 1)
		if want := n / math.Sqrt(n*n+1); math.Abs(float64(v[0])-want) > 1e-6 {
			t.Errorf("vector %d = %v, want the one for %q", i, v, texts[i])
		}
	}
}

func TestOpenAIEmbedderErrors(t *testing.T) {
	tests := []struct {
		name    string
		dim     int
		answer  func(r embedRequest) (int, string)
		status  int    // want a *StatusError with this code
		is      error  // or want errors.Is this
		message string // and the message contains this
	}{
		{"server error", 0, func(embedRequest) (int, string) {
			return 500, `{"error":{"message":"model crashed"}}`
		}, 500, nil, "embeddings endpoint answered 500 Internal Server Error: model crashed"},
		{"unauthorized", 0, func(embedRequest) (int, string) {
			return 401, `{"error":{"message":"invalid api key"}}`
		}, 401, nil, "401 Unauthorized: invalid api key"},
		{"malformed json", 0, func(embedRequest) (int, string) {
			return 200, `{"data": [{"index": 0, "embedding": [1, 2`
		}, 0, llm.ErrBadEmbeddings, "unusable embeddings answer"},
		{"wrong count", 0, func(r embedRequest) (int, string) {
			r.Input = r.Input[:1]
			return 200, vectorsFor(r, 3)
		}, 0, llm.ErrBadEmbeddings, "sent 1 vectors for 2 texts"},
		{"wrong dimension", 5, func(r embedRequest) (int, string) {
			return 200, vectorsFor(r, 3)
		}, 0, llm.ErrBadEmbeddings, "dimension 3, want 5"},
		{"index out of range", 0, func(embedRequest) (int, string) {
			return 200, `{"data":[{"index":0,"embedding":[1,0]},{"index":7,"embedding":[0,1]}]}`
		}, 0, llm.ErrBadEmbeddings, "index 7 for 2 texts"},
		{"index repeated", 0, func(embedRequest) (int, string) {
			return 200, `{"data":[{"index":1,"embedding":[1,0]},{"index":1,"embedding":[0,1]}]}`
		}, 0, llm.ErrBadEmbeddings, "index 1 twice"},
		{"mixed dimensions", 0, func(embedRequest) (int, string) {
			return 200, `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,1,0]}]}`
		}, 0, llm.ErrBadEmbeddings, "dimension 3, want 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newEmbedServer(t, tt.answer)
			e := newEmbedder(t, srv.URL, func(c *llm.OpenAIEmbedderConfig) { c.Dim = tt.dim })
			vecs, err := e.Embed(t.Context(), []string{"one", "two"})
			if err == nil {
				t.Fatalf("Embed = %v, want an error", vecs)
			}
			var se *llm.StatusError
			if tt.status != 0 && (!errors.As(err, &se) || se.StatusCode != tt.status) {
				t.Errorf("error %v is not a *StatusError with code %d", err, tt.status)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not say %q", err, tt.message)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("error %q leaks the API key", err)
			}
		})
	}
}

func TestOpenAIEmbedderTimeoutAndUnreachable(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-release // never answers before the client gives up
	}))
	defer srv.Close()
	defer close(release)
	e := newEmbedder(t, srv.URL, func(c *llm.OpenAIEmbedderConfig) { c.Timeout = 50 * time.Millisecond })
	_, err := e.Embed(t.Context(), []string{"x"})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer within 50ms") {
		t.Errorf("error = %v, want a timeout naming the limit", err)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	e = newEmbedder(t, closed.URL, nil)
	if _, err := e.Embed(t.Context(), []string{"x"}); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("error = %v, want unreachable", err)
	}
}

func TestOpenAIEmbedderConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  llm.OpenAIEmbedderConfig
		want []string
	}{
		{"ok", llm.OpenAIEmbedderConfig{BaseURL: "http://localhost:11434/v1", Model: "m"}, nil},
		{"empty", llm.OpenAIEmbedderConfig{}, []string{"needs BaseURL", "needs Model"}},
		{"relative url", llm.OpenAIEmbedderConfig{BaseURL: "localhost/v1", Model: "m"}, []string{"not an absolute http(s) URL"}},
		{"negatives", llm.OpenAIEmbedderConfig{BaseURL: "http://h/v1", Model: "m", Dim: -1, BatchSize: -1, Timeout: -1, Retries: -1},
			[]string{"Dim -1 is negative", "batch size -1", "timeout -1ns", "retries -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := llm.NewOpenAIEmbedder(tt.cfg)
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
