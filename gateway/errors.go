package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/agentbus/agentbus/api"
)

// writeError answers status with the API's error body,
// {"error": {"code", "message", "problems"}} (api.ErrorResponse).
func writeError(w http.ResponseWriter, status int, e apiError) {
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		// Every 503 is something that comes back (a stream electing a
		// leader, no orchestrator yet): say when to try again.
		w.Header().Set("Retry-After", RetryAfterSeconds)
	}
	writeJSON(w, status, api.ErrorResponse{Error: e})
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
