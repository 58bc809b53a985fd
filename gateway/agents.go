package gateway

import (
	"net/http"
	"strconv"
)

// AgentsResponse answers GET /v1/agents: every registered instance with
// its health or, with ?query=, the top-k agents by semantic similarity.
type AgentsResponse struct {
	Embedder  string `json:"embedder"`
	Instances any    `json:"instances,omitempty"`
	Matches   any    `json:"matches,omitempty"`
}

func (g *Gateway) agents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := AgentsResponse{Embedder: g.registry.Embedder().Name()}
	if query := q.Get("query"); query != "" {
		k := 5
		if v := q.Get("k"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				writeError(w, http.StatusBadRequest, apiError{Code: "invalid_request", Message: "query parameter k: want an integer in [1, 100]"})
				return
			}
			k = n
		}
		m, err := g.registry.Discover(r.Context(), query, k)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
			return
		}
		out.Matches = m
		writeJSON(w, http.StatusOK, out)
		return
	}
	list, err := g.registry.List(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	out.Instances = list
	writeJSON(w, http.StatusOK, out)
}
