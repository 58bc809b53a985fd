package retrieval_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
)

func ids(hits []retrieval.Hit) string {
	s := make([]string, len(hits))
	for i, h := range hits {
		s[i] = h.ID
	}
	return strings.Join(s, " ")
}

// rerankHits is a fused list in which the chunk that documents the query's
// identifier comes third.
func rerankHits() []retrieval.Hit {
	return []retrieval.Hit{
		{ID: "go/crypto/ecdsa#4", DocID: "go/crypto/ecdsa", Title: "package ecdsa (crypto/ecdsa) › type PublicKey",
			Text: "See PublicKey.Equal for details on how Curve is compared."},
		{ID: "go/bytes#2", DocID: "go/bytes", Title: "package bytes (bytes) › func Compare",
			Text: "Compare returns an integer comparing two byte slices lexicographically."},
		{ID: "go/sync#3", DocID: "go/sync", Title: "package sync (sync) › type RWMutex",
			Text: "A RWMutex is a reader/writer mutual exclusion lock. The lock can be held by an arbitrary number of readers or a single writer."},
		{ID: "go/sync#1", DocID: "go/sync", Title: "package sync (sync) › type Mutex",
			Text: "A Mutex is a mutual exclusion lock. The zero value for a Mutex is an unlocked mutex."},
	}
}

func TestDeterministicRerank(t *testing.T) {
	ctx := t.Context()
	hits := rerankHits()
	tests := []struct {
		name string
		q    retrieval.RerankQuery
		want string
	}{
		{"identifiers", retrieval.RerankQuery{Text: "sync.Mutex sync.RWMutex", Identifiers: []string{"sync.Mutex", "sync.RWMutex"}},
			"go/sync#3 go/sync#1 go/crypto/ecdsa#4 go/bytes#2"},
		{"words", retrieval.RerankQuery{Text: "reader writer mutual exclusion lock"},
			"go/sync#3 go/sync#1 go/crypto/ecdsa#4 go/bytes#2"},
		{"nothing to go by", retrieval.RerankQuery{}, "go/crypto/ecdsa#4 go/bytes#2 go/sync#3 go/sync#1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := retrieval.Deterministic{}.Rerank(ctx, tt.q, hits)
			if err != nil || ids(got.Hits) != tt.want || got.By != retrieval.RerankDeterministic || got.Fallback != "" {
				t.Fatalf("Rerank = %q by %s (fallback %q), %v; want %q", ids(got.Hits), got.By, got.Fallback, err, tt.want)
			}
			if err := retrieval.CheckRerank(hits, got.Hits); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Depth bounds what moves: past it, hits keep their order.
	got, _ := retrieval.Deterministic{Depth: 2}.Rerank(ctx, tests[0].q, hits)
	if ids(got.Hits) != "go/crypto/ecdsa#4 go/bytes#2 go/sync#3 go/sync#1" && ids(got.Hits) != "go/bytes#2 go/crypto/ecdsa#4 go/sync#3 go/sync#1" {
		t.Fatalf("depth 2: %q", ids(got.Hits))
	}
	if err := retrieval.CheckRerank(hits[:1], got.Hits); err == nil {
		t.Fatal("CheckRerank accepted hits it was not given")
	}
}

// chatServer speaks the OpenAI chat-completions protocol, answering every
// request with answer (or failing with status when it is ≥ 400).
func chatServer(t *testing.T, status int, answer string) (*llm.Chat, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var prompts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) != 2 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		prompts = append(prompts, req.Messages[1].Content)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status >= 400 {
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": answer}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}}})
	}))
	t.Cleanup(srv.Close)
	chat, err := llm.NewChat(llm.ChatConfig{URL: srv.URL + "/v1", Model: "ranker"})
	if err != nil {
		t.Fatal(err)
	}
	return chat, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), prompts...) }
}

func TestLLMRerank(t *testing.T) {
	q := retrieval.RerankQuery{Text: "sync.Mutex sync.RWMutex", Identifiers: []string{"sync.Mutex", "sync.RWMutex"}}
	tests := []struct {
		name, answer string
		status       int
		want, by     string
		fallback     string // a substring of the reported reason; "" none
	}{
		{"ranked", `{"ids": ["go/sync#1", "go/sync#3"]}`, 200, "go/sync#1 go/sync#3", retrieval.RerankLLM, ""},
		{"fenced", "```json\n{\"ids\": [\"go/sync#3\"]}\n```", 200, "go/sync#3", retrieval.RerankLLM, ""},
		{"keeps out", `{"ids": ["go/bytes#2", "go/sync#1", "go/sync#3", "go/crypto/ecdsa#4"]}`, 200, "go/bytes#2 go/sync#1 go/sync#3", retrieval.RerankLLM, ""},
		{"unknown id", `{"ids": ["go/sync#1", "go/os#9"]}`, 200, "go/sync#3 go/sync#1 go/crypto/ecdsa#4", retrieval.RerankDeterministic, `"go/os#9", which was not among`},
		{"repeated id", `{"ids": ["go/sync#1", "go/sync#1"]}`, 200, "go/sync#3 go/sync#1 go/crypto/ecdsa#4", retrieval.RerankDeterministic, "twice"},
		{"not json", `the best is go/sync#1`, 200, "go/sync#3 go/sync#1 go/crypto/ecdsa#4", retrieval.RerankDeterministic, "not the JSON object"},
		{"no ids", `{"ids": []}`, 200, "go/sync#3 go/sync#1 go/crypto/ecdsa#4", retrieval.RerankDeterministic, "no ids"},
		{"server error", `overloaded`, 500, "go/sync#3 go/sync#1 go/crypto/ecdsa#4", retrieval.RerankDeterministic, "500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat, prompts := chatServer(t, tt.status, tt.answer)
			r, err := retrieval.NewLLM(retrieval.LLMConfig{Chat: chat, In: 4, Out: 3})
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Rerank(t.Context(), q, rerankHits())
			if err != nil || ids(got.Hits) != tt.want || got.By != tt.by || (tt.fallback == "") != (got.Fallback == "") ||
				!strings.Contains(got.Fallback, tt.fallback) {
				t.Fatalf("Rerank = %q by %s, fallback %q, %v; want %q by %s, fallback containing %q",
					ids(got.Hits), got.By, got.Fallback, err, tt.want, tt.by, tt.fallback)
			}
			if p := prompts(); len(p) == 0 || !strings.Contains(p[0], "id: go/sync#3") || !strings.Contains(p[0], "sync.RWMutex") {
				t.Fatalf("prompts %q: want the passages and identifiers", p)
			}
		})
	}
}

func TestLLMConfig(t *testing.T) {
	if _, err := retrieval.NewLLM(retrieval.LLMConfig{}); err == nil || !strings.Contains(err.Error(), "needs a Chat") {
		t.Fatalf("no chat: %v", err)
	}
	chat, _ := chatServer(t, 200, `{}`)
	if _, err := retrieval.NewLLM(retrieval.LLMConfig{Chat: chat, In: 3, Out: 5}); err == nil {
		t.Fatal("Out > In accepted")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r, _ := retrieval.NewLLM(retrieval.LLMConfig{Chat: chat})
	if _, err := r.Rerank(ctx, retrieval.RerankQuery{Text: "x"}, rerankHits()); err == nil {
		t.Fatal("a cancelled rerank fell back instead of failing")
	}
}
