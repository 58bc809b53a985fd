package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/mcptool"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/stacktest"
)

// plan is a one-step plan on capability with input.
func plan(capability, input string) *events.Plan {
	return &events.Plan{Steps: []events.PlanStep{{ID: "tool", Capability: capability, Input: json.RawMessage(input)}}}
}

// A real agentbus — NATS, a worker serving an MCP server's tools, an
// orchestrator and a gateway — runs the tools as plan steps.
func TestToolsRunAsPlanSteps(t *testing.T) {
	h := &toolHooks{slowStarted: make(chan struct{}, 1), slowCancelled: make(chan struct{})}
	a := newAgent(t, mcptool.Server{Name: "web", URL: httpServer(t, newToolServer(h))})
	files := newAgent(t, mcptool.Server{Name: "files", Command: stdioCommand(t)})
	s := stacktest.Start(t, stacktest.Options{Gateway: true, Agents: []agents.Agent{a, files}})
	c, err := client.New(client.Config{URL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	run := func(t *testing.T, c *client.Client, p *events.Plan) (client.Result, error) {
		t.Helper()
		sub, err := c.Submit(ctx, client.Submission{Plan: p})
		if err != nil {
			t.Fatalf("submit: %v", err)
		}
		return c.Wait(ctx, sub.WorkflowID)
	}

	t.Run("registry", func(t *testing.T) {
		list, err := c.Agents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list, func(in discovery.Instance) bool { return in.Name == "mcp-web" })
		if i < 0 {
			t.Fatalf("no mcp-web among %d registered agents", len(list))
		}
		in := list[i]
		if !slices.Contains(in.Capabilities, "tool_web_add") || !slices.Contains(in.Capabilities, "tool_web_slow") || len(in.InputSchemas["tool_web_add"]) == 0 {
			t.Fatalf("mcp-web registered %v with schemas for %d capabilities", in.Capabilities, len(in.InputSchemas))
		}
	})
	t.Run("add completes with the structured result, run once", func(t *testing.T) {
		before := h.adds.Load()
		r, err := run(t, c, plan("tool_web_add", `{"a":2,"b":3}`))
		if err != nil || string(r.Result) != `{"sum":5}` {
			t.Fatalf("result %s, %v; want {\"sum\":5}", r.Result, err)
		}
		if n := h.adds.Load() - before; n != 1 {
			t.Fatalf("the tool ran %d times, want once", n)
		}
	})
	t.Run("a stdio server's tool too", func(t *testing.T) {
		r, err := run(t, c, plan("tool_files_add", `{"a":20,"b":22}`))
		if err != nil || string(r.Result) != `{"sum":42}` {
			t.Fatalf("result %s, %v; want {\"sum\":42}", r.Result, err)
		}
	})
	t.Run("bad input is refused at submission", func(t *testing.T) {
		before := h.adds.Load()
		_, err := c.Submit(ctx, client.Submission{Plan: plan("tool_web_add", `{"a":"two","b":3}`)})
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Code != events.CodeInvalidInput || len(ae.Problems) != 1 || ae.Problems[0].Pointer != "/plan/steps/0/input/a" {
			t.Fatalf("submit with a bad input: %v, want 400 invalid_input at /plan/steps/0/input/a", err)
		}
		if h.adds.Load() != before {
			t.Fatal("the tool ran")
		}
	})
	t.Run("bad input submitted over NATS fails before dispatch", func(t *testing.T) {
		nc, err := client.NewNATS(s.Env.Bus, client.NATSConfig{})
		if err != nil {
			t.Fatal(err)
		}
		before := h.adds.Load()
		_, err = run(t, nc, plan("tool_web_add", `{"a":2}`))
		var we *client.WorkflowError
		if !errors.As(err, &we) || we.Code != events.CodeInvalidInput || we.StepID != "tool" || !strings.Contains(we.Message, "/plan/steps/0/input/b") {
			t.Fatalf("workflow with a bad input: %v, want invalid_input naming /plan/steps/0/input/b", err)
		}
		if h.adds.Load() != before {
			t.Fatal("the tool ran")
		}
	})
	t.Run("isError fails the step once", func(t *testing.T) {
		before := h.fails.Load()
		_, err := run(t, c, plan("tool_web_fail", `{}`))
		var we *client.WorkflowError
		if !errors.As(err, &we) || we.Code != events.CodeStepFailed || !strings.Contains(we.Message, "the disk is on fire") {
			t.Fatalf("workflow of a failing tool: %v, want step_failed with the tool's text", err)
		}
		if n := h.fails.Load() - before; n != 1 {
			t.Fatalf("the failing tool ran %d times, want once (no retry)", n)
		}
	})
	t.Run("cancel reaches the tool", func(t *testing.T) {
		sub, err := c.Submit(ctx, client.Submission{Plan: plan("tool_web_slow", ``)})
		if err != nil {
			t.Fatal(err)
		}
		waitChan(t, "the slow tool to start", h.slowStarted)
		if _, err := c.Cancel(ctx, sub.WorkflowID, "test"); err != nil {
			t.Fatal(err)
		}
		waitChan(t, "the slow tool's context to end", h.slowCancelled)
		var we *client.WorkflowError
		if _, err := c.Wait(ctx, sub.WorkflowID); !errors.As(err, &we) || we.Code != "canceled" {
			t.Fatalf("cancelled workflow: %v, want canceled", err)
		}
	})
}
