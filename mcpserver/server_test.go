package mcpserver_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/internal/stacktest"
	"github.com/agentbus/agentbus/mcpserver"
)

// inMemory connects a client to a server built on a gateway client of
// s, over in-memory transports.
func inMemory(t *testing.T, s *stacktest.Stack) (*mcp.ClientSession, *progress) {
	t.Helper()
	c, err := client.New(client.Config{URL: "http://" + s.Addr})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Config{Client: mcpserver.Static(c), Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return connect(t, ct)
}

func TestServer(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Gateway: true, Agents: []agents.Agent{sleep.Agent{}}})
	cs, prog := inMemory(t, s)
	exercise(t, cs, prog)
}

// exercise uses every tool and resource as an assistant would.
func exercise(t *testing.T, cs *mcp.ClientSession, prog *progress) {
	t.Run("tools", func(t *testing.T) {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
			if tl.InputSchema == nil {
				t.Errorf("tool %s has no input schema", tl.Name)
			}
		}
		slices.Sort(names)
		if want := []string{"approve", "cancel", "follow", "reject", "search", "submit"}; !slices.Equal(names, want) {
			t.Errorf("tools %v, want %v", names, want)
		}
		tmpl, err := cs.ListResourceTemplates(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tmpl.ResourceTemplates) != 2 {
			t.Errorf("%d resource templates, want 2", len(tmpl.ResourceTemplates))
		}
	})

	t.Run("submit and wait", func(t *testing.T) {
		var out mcpserver.SubmitOutput
		call(t, cs, "submit", map[string]any{"wait": true, "plan": map[string]any{"steps": []any{
			map[string]any{"id": "a", "capability": "echo", "input": map[string]any{"say": "hello"}},
			map[string]any{"id": "b", "capability": "echo", "depends_on": []string{"a"}},
		}}}, &out)
		if out.WorkflowID == "" || out.Outcome == nil || out.Outcome.Status != "completed" {
			t.Fatalf("submit: %+v", out)
		}
		msgs := prog.waitFor(t, "completed in")
		for _, want := range []string{"step a: completed", "step b: completed — completed on "} {
			if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, want) }) {
				t.Errorf("progress notifications %q: want one %q", msgs, want)
			}
		}
		for _, want := range []string{"(artifact a.output)", "(artifact b.output)"} { // a step's output comes with its status
			if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasSuffix(m, want) }) {
				t.Errorf("progress notifications %q: want one %q", msgs, want)
			}
		}
		state, err := read(t, cs, "agentbus://workflows/"+out.WorkflowID)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Status string `json:"status"`
			Tasks  map[string]json.RawMessage
		}
		if err := json.Unmarshal([]byte(state), &st); err != nil || st.Status != "completed" || len(st.Tasks) != 2 {
			t.Errorf("state resource: %v %s", err, state)
		}
		answer, err := read(t, cs, "agentbus://workflows/"+out.WorkflowID+"/answer")
		if err != nil {
			t.Fatal(err)
		}
		var ans struct {
			StepID            string                     `json:"step_id"`
			DependencyOutputs map[string]json.RawMessage `json:"dependency_outputs"`
		}
		if err := json.Unmarshal([]byte(answer), &ans); err != nil || ans.StepID != "b" || !strings.Contains(string(ans.DependencyOutputs["a"]), "hello") {
			t.Errorf("answer resource: %v %s", err, answer)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		var out mcpserver.SubmitOutput
		call(t, cs, "submit", map[string]any{"plan": map[string]any{"steps": []any{
			map[string]any{"id": "nap", "capability": "sleep", "input": map[string]any{"ms": 600000}}}}}, &out)
		waitPhase(t, cs, out.WorkflowID, "executing")
		var ctl mcpserver.ControlOutput
		call(t, cs, "cancel", map[string]any{"workflow_id": out.WorkflowID, "reason": "no longer needed"}, &ctl)
		var o mcpserver.Outcome
		call(t, cs, "follow", map[string]any{"workflow_id": out.WorkflowID}, &o)
		if o.Status != "canceled" {
			t.Errorf("after cancel: %+v", o)
		}
		_, err := read(t, cs, "agentbus://workflows/"+out.WorkflowID+"/answer")
		if err == nil || !strings.Contains(err.Error(), "ended canceled") {
			t.Errorf("answer of a canceled workflow: %v", err)
		}
		res := callRaw(t, cs, "cancel", map[string]any{"workflow_id": out.WorkflowID})
		if !res.IsError || !strings.Contains(text(res), "not applied") {
			t.Errorf("cancel twice: %v %s", res.IsError, text(res))
		}
	})

	t.Run("approve", func(t *testing.T) {
		var out mcpserver.SubmitOutput
		call(t, cs, "submit", map[string]any{"plan": map[string]any{"steps": []any{
			map[string]any{"id": "check", "capability": "echo", "input": "deploy?", "requires_approval": true}}}}, &out)
		waitPhase(t, cs, out.WorkflowID, "awaiting_approval")
		if _, err := read(t, cs, "agentbus://workflows/"+out.WorkflowID+"/answer"); err == nil || !strings.Contains(err.Error(), "no answer yet") {
			t.Errorf("answer while awaiting approval: %v", err)
		}
		var ctl mcpserver.ControlOutput
		call(t, cs, "approve", map[string]any{"workflow_id": out.WorkflowID, "step": "check", "comment": "looks right"}, &ctl)
		var o mcpserver.Outcome
		call(t, cs, "follow", map[string]any{"workflow_id": out.WorkflowID}, &o)
		if o.Status != "completed" {
			t.Errorf("after approve: %+v", o)
		}
	})

	t.Run("reject", func(t *testing.T) {
		var out mcpserver.SubmitOutput
		call(t, cs, "submit", map[string]any{"plan": map[string]any{"steps": []any{
			map[string]any{"id": "check", "capability": "echo", "requires_approval": true}}}}, &out)
		waitPhase(t, cs, out.WorkflowID, "awaiting_approval")
		var ctl mcpserver.ControlOutput
		call(t, cs, "reject", map[string]any{"workflow_id": out.WorkflowID, "comment": "no"}, &ctl)
		var o mcpserver.Outcome
		call(t, cs, "follow", map[string]any{"workflow_id": out.WorkflowID}, &o)
		if o.Status != "rejected" {
			t.Errorf("after reject: %+v", o)
		}
	})

	t.Run("tool errors", func(t *testing.T) {
		for _, tc := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"submit", map[string]any{}, "give a query or a plan"},
			{"submit", map[string]any{"plan": map[string]any{"steps": []any{map[string]any{"id": "a", "capability": "Not Valid"}}}}, "/plan/steps/0/capability"},
			{"follow", map[string]any{"workflow_id": "no-such-workflow"}, `no workflow "no-such-workflow"`},
			{"approve", map[string]any{"workflow_id": "no-such-workflow"}, `no workflow "no-such-workflow"`},
		} {
			t.Run(tc.tool, func(t *testing.T) {
				res := callRaw(t, cs, tc.tool, tc.args)
				if !res.IsError || !strings.Contains(text(res), tc.want) {
					t.Errorf("%s %v: error %v %q, want one saying %q", tc.tool, tc.args, res.IsError, text(res), tc.want)
				}
			})
		}
		if _, err := read(t, cs, "agentbus://workflows/no-such-workflow"); err == nil {
			t.Error("reading an unknown workflow: no error")
		}
	})
}
