package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
)

// PlanStep is one step of a submitted plan: the MCP face of
// events.PlanStep, with an input of any JSON value.
type PlanStep struct {
	ID               string   `json:"id" jsonschema:"the step's id, unique in the plan (letters, digits, _ and -)"`
	Capability       string   `json:"capability" jsonschema:"the capability that runs the step, e.g. echo, search, summarize"`
	Input            any      `json:"input,omitempty" jsonschema:"the step's input: any JSON value the capability reads"`
	DependsOn        []string `json:"depends_on,omitempty" jsonschema:"ids of the steps whose outputs this step needs"`
	Optional         bool     `json:"optional,omitempty" jsonschema:"the workflow goes on if this step fails"`
	Fallback         string   `json:"fallback,omitempty" jsonschema:"a capability to try once if this step fails"`
	RequiresApproval bool     `json:"requires_approval,omitempty" jsonschema:"hold the step's result for a human decision: the approve or reject tool"`
	TimeoutMS        int64    `json:"timeout_ms,omitempty" jsonschema:"bound on one run of the step, in milliseconds"`
}

// Plan is a DAG of steps.
type Plan struct {
	Steps []PlanStep `json:"steps" jsonschema:"the plan's steps, at least one"`
}

// SubmitInput is the submit tool's input.
type SubmitInput struct {
	Query     string `json:"query,omitempty" jsonschema:"a question or task in plain language, planned by agentbus; with a plan, kept as its context"`
	Plan      *Plan  `json:"plan,omitempty" jsonschema:"an explicit plan of steps, run as given"`
	SessionID string `json:"session_id,omitempty" jsonschema:"a conversation session this workflow is a turn of"`
	Wait      bool   `json:"wait,omitempty" jsonschema:"follow the workflow until it ends, with a progress notification per event, and return its outcome"`
}

// SubmitOutput is the submit tool's result: the workflow started and,
// with wait, how it ended.
type SubmitOutput struct {
	WorkflowID string   `json:"workflow_id"`
	TenantID   string   `json:"tenant_id"`
	Outcome    *Outcome `json:"outcome,omitempty" jsonschema:"how the workflow ended, when submitted with wait"`
}

// Outcome is how a workflow ended.
type Outcome struct {
	WorkflowID string `json:"workflow_id"`
	// Status is completed, failed, canceled or rejected.
	Status string `json:"status" jsonschema:"completed, failed, canceled or rejected"`
	Result any    `json:"result,omitempty" jsonschema:"the result of a completed workflow: its sink step's output, or the sink steps' outputs by step id"`
	Error  string `json:"error,omitempty" jsonschema:"why a workflow that did not complete ended"`
	StepID string `json:"step_id,omitempty" jsonschema:"the step that failed the workflow, if one did"`
	Events int    `json:"events" jsonschema:"how many events were followed"`
}

// WorkflowInput names a workflow.
type WorkflowInput struct {
	WorkflowID string `json:"workflow_id" jsonschema:"the workflow's id, as submit returned it"`
}

// DecisionInput is the approve and reject tools' input.
type DecisionInput struct {
	WorkflowID string `json:"workflow_id" jsonschema:"the workflow's id"`
	Step       string `json:"step,omitempty" jsonschema:"the step awaiting a decision; empty: every step awaiting one"`
	Comment    string `json:"comment,omitempty" jsonschema:"why, recorded with the decision"`
}

// CancelInput is the cancel tool's input.
type CancelInput struct {
	WorkflowID string `json:"workflow_id" jsonschema:"the workflow's id"`
	Reason     string `json:"reason,omitempty" jsonschema:"why, recorded with the cancellation"`
}

// ControlOutput is the answer to approve, reject or cancel.
type ControlOutput struct {
	WorkflowID string `json:"workflow_id"`
	Status     string `json:"status" jsonschema:"the workflow's state after the action"`
	Message    string `json:"message,omitempty"`
}

func (s *server) addTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "submit", Title: "Submit a workflow",
		Description: "Start an agentbus workflow from a query (agentbus plans it) or an explicit plan of steps. " +
			"With wait, follow it to its end (a progress notification per event) and return its result."}, s.submit)
	mcp.AddTool(srv, &mcp.Tool{Name: "follow", Title: "Follow a workflow",
		Description: "Follow a workflow's events until it ends, sending a progress notification per event, and return how it ended and its result."}, s.follow)
	mcp.AddTool(srv, &mcp.Tool{Name: "approve", Title: "Approve a step",
		Description: "Approve the step (or every step) of a workflow that awaits a decision; the workflow goes on."}, s.decide("approve"))
	mcp.AddTool(srv, &mcp.Tool{Name: "reject", Title: "Reject a step",
		Description: "Reject the step of a workflow that awaits a decision; the workflow ends rejected."}, s.decide("reject"))
	mcp.AddTool(srv, &mcp.Tool{Name: "cancel", Title: "Cancel a workflow",
		Description: "Cancel a running workflow: its running steps stop and it ends canceled.", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, s.cancel)
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Title: "Search documents",
		Description: "Search the tenant's documents (hybrid keyword and vector search with reranking) and return the best passages with their documents.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.search)
}

func ptr[T any](v T) *T { return &v }

func (s *server) submit(ctx context.Context, req *mcp.CallToolRequest, in SubmitInput) (*mcp.CallToolResult, SubmitOutput, error) {
	if in.Query == "" && in.Plan == nil {
		return nil, SubmitOutput{}, errors.New("submit: give a query or a plan")
	}
	sub := client.Submission{Query: in.Query, SessionID: in.SessionID}
	if in.Plan != nil {
		p, err := in.Plan.events()
		if err != nil {
			return nil, SubmitOutput{}, err
		}
		sub.Plan = p
	}
	c, err := s.gateway(ctx, req.Extra)
	if err != nil {
		return nil, SubmitOutput{}, err
	}
	got, err := c.Submit(ctx, sub)
	if err != nil {
		return nil, SubmitOutput{}, fmt.Errorf("submit: %w", err)
	}
	out := SubmitOutput{WorkflowID: got.WorkflowID, TenantID: got.TenantID}
	if in.Wait {
		o, err := follow(ctx, req, c, got.WorkflowID)
		if err != nil {
			return nil, out, fmt.Errorf("submit: workflow %s started, but following it failed: %w", got.WorkflowID, err)
		}
		out.Outcome = &o
	}
	return nil, out, nil
}

// events is the plan on the wire, each step's input as raw JSON.
func (p *Plan) events() (*events.Plan, error) {
	ep := &events.Plan{Steps: make([]events.PlanStep, 0, len(p.Steps))}
	for i, st := range p.Steps {
		var input json.RawMessage
		if st.Input != nil {
			b, err := json.Marshal(st.Input)
			if err != nil {
				return nil, fmt.Errorf("submit: plan.steps[%d].input: %w", i, err)
			}
			input = b
		}
		ep.Steps = append(ep.Steps, events.PlanStep{ID: st.ID, Capability: st.Capability, Input: input, DependsOn: st.DependsOn,
			Optional: st.Optional, Fallback: st.Fallback, RequiresApproval: st.RequiresApproval, TimeoutMS: st.TimeoutMS})
	}
	return ep, nil
}

func (s *server) follow(ctx context.Context, req *mcp.CallToolRequest, in WorkflowInput) (*mcp.CallToolResult, Outcome, error) {
	if in.WorkflowID == "" {
		return nil, Outcome{}, errors.New("follow: workflow_id is required")
	}
	c, err := s.gateway(ctx, req.Extra)
	if err != nil {
		return nil, Outcome{}, err
	}
	// An id given by hand that the gateway does not know is an answer at
	// once, not one to wait for as a just-submitted workflow's may be.
	if _, err := c.State(ctx, in.WorkflowID); err != nil {
		return nil, Outcome{}, fmt.Errorf("follow %s: %w", in.WorkflowID, err)
	}
	o, err := follow(ctx, req, c, in.WorkflowID)
	if err != nil {
		return nil, Outcome{}, fmt.Errorf("follow %s: %w", in.WorkflowID, err)
	}
	return nil, o, nil
}

func (s *server) decide(action string) mcp.ToolHandlerFor[DecisionInput, ControlOutput] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in DecisionInput) (*mcp.CallToolResult, ControlOutput, error) {
		if in.WorkflowID == "" {
			return nil, ControlOutput{}, fmt.Errorf("%s: workflow_id is required", action)
		}
		c, err := s.gateway(ctx, req.Extra)
		if err != nil {
			return nil, ControlOutput{}, err
		}
		do := c.Approve
		if action == "reject" {
			do = c.Reject
		}
		r, err := do(ctx, in.WorkflowID, in.Step, in.Comment)
		return controlled(action, in.WorkflowID, r, err)
	}
}

func (s *server) cancel(ctx context.Context, req *mcp.CallToolRequest, in CancelInput) (*mcp.CallToolResult, ControlOutput, error) {
	if in.WorkflowID == "" {
		return nil, ControlOutput{}, errors.New("cancel: workflow_id is required")
	}
	c, err := s.gateway(ctx, req.Extra)
	if err != nil {
		return nil, ControlOutput{}, err
	}
	r, err := c.Cancel(ctx, in.WorkflowID, in.Reason)
	return controlled("cancel", in.WorkflowID, r, err)
}

// controlled turns the answer to a control action into the tool's result:
// an action that did not apply is a tool error saying why.
func controlled(action, workflow string, r client.ControlResult, err error) (*mcp.CallToolResult, ControlOutput, error) {
	var ae *client.APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusConflict {
		// 409 is a control answer too, whose body the error carries.
		var cr client.ControlResult
		if json.Unmarshal([]byte(ae.Message), &cr) == nil && cr.Status != "" {
			r, err = cr, nil
		}
	}
	if err != nil {
		return nil, ControlOutput{}, fmt.Errorf("%s %s: %w", action, workflow, err)
	}
	if !r.Applied {
		return nil, ControlOutput{}, fmt.Errorf("%s %s: not applied, the workflow is %s: %s", action, workflow, r.Status, r.Message)
	}
	return nil, ControlOutput{WorkflowID: r.WorkflowID, Status: string(r.Status), Message: r.Message}, nil
}
