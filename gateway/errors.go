package gateway

import (
	"encoding/json"
	"net/http"
)

// apiError is the body of every error answer of the HTTP API (not of
// JSON-RPC, which has its own): {"error": {"code", "message", "problems"}}.
// Code is a stable word a program may switch on, Message a sentence for a
// person, Problems what exactly was wrong with the request, if anything
// was.
type apiError struct {
	Code     string    `json:"code"`
	Message  string    `json:"message"`
	Problems []Problem `json:"problems,omitempty"`
}

func writeError(w http.ResponseWriter, status int, e apiError) {
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		// Every 503 is something that comes back (a stream electing a
		// leader, no orchestrator yet): say when to try again.
		w.Header().Set("Retry-After", RetryAfterSeconds)
	}
	writeJSON(w, status, map[string]apiError{"error": e})
}

// RetryAfterSeconds is the Retry-After of the gateway's 503 answers: a
// stream elects a leader in a few seconds.
const RetryAfterSeconds = "2"

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
