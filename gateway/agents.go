package gateway

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/agentbus/agentbus/discovery"
)

// AgentsResponse answers GET /v1/agents: every registered instance with
// its health or, with ?query=, the k (default 5) agents that best fit the
// query, from the registry's index: by semantic similarity, the healthy
// and less loaded first among close scores (discovery.Match.Rank). Embedder
// names the embedder queries and cards are compared with.
type AgentsResponse struct {
	Embedder  string `json:"embedder"`
	Instances any    `json:"instances,omitempty"`
	Matches   any    `json:"matches,omitempty"`
}

// maxAgentsQuery bounds ?query=: it is embedded on every request.
const maxAgentsQuery = 4096

func (g *Gateway) agents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := AgentsResponse{Embedder: g.registry.Embedder().Name()}
	query, hasQuery := q.Get("query"), q.Has("query")
	switch {
	case hasQuery && strings.TrimSpace(query) == "":
		writeBadRequest(w, queryProblem("query", "%s is blank: want the text to match agents against, or no query parameter to list every agent", quoted(query)))
		return
	case len(query) > maxAgentsQuery:
		writeBadRequest(w, queryProblem("query", "%s is longer than %d bytes", quoted(query), maxAgentsQuery))
		return
	case !hasQuery && q.Has("k"):
		// k alone would be ignored, and the caller would not know why it
		// got every agent.
		writeBadRequest(w, queryProblem("k", "%s without query: k is how many matches of ?query= to return", quoted(q.Get("k"))))
		return
	}
	if hasQuery {
		k := discovery.DefaultK
		if v := q.Get("k"); q.Has("k") {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				writeBadRequest(w, queryProblem("k", "%s: want an integer in [1, 100]", quoted(v)))
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
