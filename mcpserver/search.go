package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
)

// searchCapability is the built-in search agent's capability: the gateway
// has no search endpoint (its /v1/documents lists, reads and deletes), so
// a search is a one-step workflow of it, as `agentbus ask` would run.
const searchCapability = "search"

// SearchInput is the search tool's input.
type SearchInput struct {
	Query    string   `json:"query" jsonschema:"what to search for"`
	K        int      `json:"k,omitempty" jsonschema:"how many passages to return, 1 to 100 (default the search agent's)"`
	Profiles []string `json:"profiles,omitempty" jsonschema:"search profiles to run (default the agent's choice)"`
}

// Hit is one passage found.
type Hit struct {
	ID     string  `json:"id"`
	DocID  string  `json:"doc_id"`
	Title  string  `json:"title,omitempty"`
	Text   string  `json:"text"`
	Source string  `json:"source,omitempty"`
	Score  float64 `json:"score"`
}

// SearchOutput is the search tool's result.
type SearchOutput struct {
	WorkflowID string `json:"workflow_id" jsonschema:"the search workflow, readable as agentbus://workflows/{id}"`
	Hits       []Hit  `json:"hits"`
}

func (s *server) search(ctx context.Context, req *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	if in.Query == "" {
		return nil, SearchOutput{}, errors.New("search: query is required")
	}
	if in.K < 0 || in.K > 100 {
		return nil, SearchOutput{}, fmt.Errorf("search: k %d: want 1 to 100", in.K)
	}
	input := map[string]any{"query": in.Query}
	if in.K > 0 {
		input["k"] = in.K
	}
	if len(in.Profiles) > 0 {
		input["profiles"] = in.Profiles
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, SearchOutput{}, fmt.Errorf("search: %w", err)
	}
	c, err := s.gateway(ctx, req.Extra)
	if err != nil {
		return nil, SearchOutput{}, err
	}
	sub, err := c.Submit(ctx, client.Submission{Query: in.Query, Plan: &events.Plan{Steps: []events.PlanStep{
		{ID: "search", Capability: searchCapability, Input: raw}}}})
	if err != nil {
		return nil, SearchOutput{}, fmt.Errorf("search: %w", err)
	}
	out := SearchOutput{WorkflowID: sub.WorkflowID, Hits: []Hit{}}
	o, err := follow(ctx, req, c, sub.WorkflowID)
	if err != nil {
		return nil, out, fmt.Errorf("search: following workflow %s: %w", sub.WorkflowID, err)
	}
	if o.Status != string(events.StateCompleted) {
		return nil, out, fmt.Errorf("search: workflow %s ended %s: %s", sub.WorkflowID, o.Status, o.Error)
	}
	var r struct {
		Hits []Hit `json:"hits"`
	}
	if raw, ok := o.Result.(json.RawMessage); ok && len(raw) > 0 {
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, out, fmt.Errorf("search: reading the hits of workflow %s: %w", sub.WorkflowID, err)
		}
	}
	if r.Hits != nil {
		out.Hits = r.Hits
	}
	return nil, out, nil
}
