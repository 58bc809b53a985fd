package llm_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/llm"
)

// TestChatObserveReportsEveryCall checks the metrics hook: model, tokens
// and outcome of an answer, of an error status and of an empty answer.
func TestChatObserveReportsEveryCall(t *testing.T) {
	status, content := http.StatusOK, "hello"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status >= 400 {
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "overloaded"}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
			"usage":   map[string]any{"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
		})
	}))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var calls []llm.Call
	c := newChat(t, srv.URL, func(cfg *llm.ChatConfig) {
		cfg.Observe = func(c llm.Call) { mu.Lock(); calls = append(calls, c); mu.Unlock() }
	})
	if _, err := c.Complete(t.Context(), "s", "u"); err != nil {
		t.Fatal(err)
	}
	status = http.StatusServiceUnavailable
	if _, err := c.Complete(t.Context(), "s", "u"); err == nil {
		t.Fatal("no error from a 503")
	}
	status, content = http.StatusOK, ""
	if _, err := c.Complete(t.Context(), "s", "u"); err == nil {
		t.Fatal("no error from an empty answer")
	}
	want := []struct {
		outcome            string
		prompt, completion int64
	}{{"ok", 12, 3}, {"status", 0, 0}, {"no_answer", 12, 3}}
	if len(calls) != len(want) {
		t.Fatalf("%d calls observed, want %d", len(calls), len(want))
	}
	for i, w := range want {
		got := calls[i]
		if got.Model != "test-model" || got.Outcome() != w.outcome || got.PromptTokens != w.prompt || got.CompletionTokens != w.completion || got.Duration <= 0 {
			t.Errorf("call %d: %+v (outcome %s), want %s with %d+%d tokens", i, got, got.Outcome(), w.outcome, w.prompt, w.completion)
		}
	}
}
