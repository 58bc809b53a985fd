package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/agentbus/agentbus/schemas"
)

// apiError is the body of every error answer.
type apiError struct {
	Code     string            `json:"code"`
	Message  string            `json:"message"`
	Problems []schemas.Problem `json:"problems,omitempty"`
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
