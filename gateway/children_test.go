package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/subworkflow"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/internal/stacktest"
)

// TestChildrenOfAWorkflow: a sub-workflow's state names its parent in
// its metadata, and GET /v1/workflows?parent_workflow=ID lists the
// children of a workflow (and only them), each naming its parent.
func TestChildrenOfAWorkflow(t *testing.T) {
	env := bustest.New(t)
	sw, err := subworkflow.New(subworkflow.Config{Bus: env.Bus, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	stacktest.StartOn(t, env, stacktest.Options{Agents: []agents.Agent{sw}})
	s := startGateway(t, env)
	child := map[string]any{"plan": plan("e:echo")}
	parent := s.mustSubmit(t, map[string]any{"workflow_id": "parent", "query": "two children",
		"plan": map[string]any{"steps": []map[string]any{
			{"id": "one", "capability": subworkflow.Capability, "input": child},
			{"id": "two", "capability": subworkflow.Capability, "input": child},
		}}})
	s.mustFollow(t, parent.EventsURL)
	s.mustSubmit(t, map[string]any{"workflow_id": "other", "query": "no children", "plan": plan("e:echo")})

	l := s.list(t, "/v1/workflows?parent_workflow=parent")
	if len(l.Workflows) != 2 {
		t.Fatalf("children of parent: %+v, want 2", l.Workflows)
	}
	for _, w := range l.Workflows {
		if !strings.HasPrefix(w.WorkflowID, "sw-") || w.ParentWorkflow != "parent" || w.Status != "completed" {
			t.Fatalf("child %+v", w)
		}
		st := s.state(t, "/v1/workflows/"+w.WorkflowID)
		md, _ := st["metadata"].(map[string]any)
		if md["parent_workflow"] != "parent" || (md["parent_step"] != "one" && md["parent_step"] != "two") || md["depth"] != "1" {
			t.Fatalf("child %s metadata %v", w.WorkflowID, st["metadata"])
		}
	}
	if l := s.list(t, "/v1/workflows?parent_workflow=other"); len(l.Workflows) != 0 {
		t.Fatalf("children of a workflow without any: %+v", l.Workflows)
	}
	if l := s.list(t, "/v1/workflows?parent_workflow=parent&limit=1"); len(l.Workflows) != 1 || !strings.Contains(l.Next, "parent_workflow=parent") {
		t.Fatalf("a page of children: %+v, next %q: want one and a next link that keeps the filter", l.Workflows, l.Next)
	}
	r := s.mustDo(t, http.MethodGet, "/v1/workflows?parent_workflow=Not.An.Id", nil)
	e := wantError(t, "a bad parent_workflow", r, http.StatusBadRequest, "invalid_request")
	if len(e.Error.Problems) != 1 || e.Error.Problems[0].Name != "parent_workflow" {
		t.Fatalf("a bad parent_workflow: %s", r.Body)
	}
}
