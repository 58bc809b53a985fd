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
	writeJSON(w, status, map[string]apiError{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
