package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestServeWithAFailingLLM: with --llm-url, the planner and the agents ask
// the model first; when it fails they fall back to their heuristics, the
// workflow still completes, and the events say that the LLM failed and the
// heuristic answered.
func TestServeWithAFailingLLM(t *testing.T) {
	var calls atomic.Int64
	llmSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"message":"model overloaded","type":"server_error"}}`))
	}))
	t.Cleanup(llmSrv.Close)

	info := startServeWith(t, serveFlags{data: t.TempDir(), eventsMaxAge: time.Hour,
		plan: planFlags{llmURL: llmSrv.URL + "/v1", llmModel: "test-model", llmTimeout: 5 * time.Second}}, time.Minute).info
	code, out, stderr := cli(t, "ask", "--url", info.HTTPURL, "what did Ada Lovelace write in 1843?")
	if code != exitCompleted {
		t.Fatalf("ask: exit %d: %s\n%s", code, stderr, out)
	}
	// The planner and entity_extraction asked (summarize had no hits to
	// compose from, so it had nothing to ask).
	if calls.Load() < 2 {
		t.Fatalf("the LLM was asked %d times: want the planner and the agents to ask it:\n%s", calls.Load(), out)
	}
	if !strings.Contains(out, "LLM planner failed") || !strings.Contains(out, "heuristic planner: simple query") {
		t.Fatalf("the plan does not say the LLM failed and the heuristic planned:\n%s", out)
	}
	if !strings.Contains(out, "progress  entity_extraction   10% LLM test-model") || !strings.Contains(out, "used the heuristic") {
		t.Fatalf("entity_extraction does not report its fallback:\n%s", out)
	}
}
