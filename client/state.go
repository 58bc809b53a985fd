package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/discovery"
	engine "github.com/agentbus/agentbus/workflow"
)

// State is a workflow's checkpoint as the gateway gives it: status,
// plan, stages, each step's state and output, result, error, timings.
type State = engine.Checkpoint

// State reads a workflow's state (GET /v1/workflows/{id}).
func (c *Client) State(ctx context.Context, workflow string) (State, error) {
	if c.nc != nil {
		return c.nc.state(ctx, workflow)
	}
	var out State
	err := c.call(ctx, http.MethodGet, "/v1/workflows/"+url.PathEscape(workflow), nil, http.StatusOK, &out)
	return out, err
}

// Revision is one kept checkpoint revision of a workflow: the KV
// revision (what Fork takes), "superseded" or the workflow's status then
// ("active", "completed", "failed"), and the checkpoint; its State method
// decodes the checkpoint.
type Revision = api.Revision

// Checkpoints lists a workflow's kept checkpoint revisions, oldest first
// (GET /v1/workflows/{id}/checkpoints).
func (c *Client) Checkpoints(ctx context.Context, workflow string) ([]Revision, error) {
	if c.nc != nil {
		return c.nc.checkpoints(ctx, workflow)
	}
	var out struct {
		Revisions []Revision `json:"revisions"`
	}
	err := c.call(ctx, http.MethodGet, "/v1/workflows/"+url.PathEscape(workflow)+"/checkpoints", nil, http.StatusOK, &out)
	return out.Revisions, err
}

// Agents lists every registered agent instance with its health and live
// stats (GET /v1/agents).
func (c *Client) Agents(ctx context.Context) ([]discovery.Instance, error) {
	if c.nc != nil {
		r, err := c.nc.registry(ctx)
		if err != nil {
			return nil, err
		}
		return r.List(ctx)
	}
	var out struct {
		Instances []discovery.Instance `json:"instances"`
	}
	err := c.call(ctx, http.MethodGet, "/v1/agents", nil, http.StatusOK, &out)
	return out.Instances, err
}

// Discovered is the answer to Discover: the agents that best fit a
// query, best first, and the embedder that ranked them.
type Discovered struct {
	Embedder string            `json:"embedder"`
	Matches  []discovery.Match `json:"matches"`
}

// Discover ranks the agents against a query and returns the top k
// (GET /v1/agents?query=…&k=…; k ≤ 0 means the gateway's default, 5).
func (c *Client) Discover(ctx context.Context, query string, k int) (Discovered, error) {
	if c.nc != nil {
		r, err := c.nc.registry(ctx)
		if err != nil {
			return Discovered{}, err
		}
		m, err := r.Discover(ctx, query, k)
		return Discovered{Embedder: r.Embedder().Name(), Matches: m}, err
	}
	q := url.Values{"query": {query}}
	if k > 0 {
		q.Set("k", strconv.Itoa(k))
	}
	var out Discovered
	err := c.call(ctx, http.MethodGet, "/v1/agents?"+q.Encode(), nil, http.StatusOK, &out)
	return out, err
}
