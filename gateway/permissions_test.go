package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/permissions"
)

// TestToolPermissionsRefuseExplicitPlans: with a tool permissions table,
// an explicit plan with a step the token's tenant and role may not run is
// refused with 403 permission_denied naming the step's pointer and the
// rule, before it is stored; an allowed one is accepted and its
// checkpoint carries the token's role for the orchestrator.
func TestToolPermissionsRefuseExplicitPlans(t *testing.T) {
	table, err := permissions.Parse([]byte(`{"acme": {"client": {"deny": ["tool_files_*"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := startStack(t, withTokens, func(c *gateway.Config) { c.Permissions = table })

	body, _ := json.Marshal(map[string]any{"plan": plan("a:echo", "rm:tool_files_delete:a")})
	r := s.mustDo(t, http.MethodPost, "/v1/workflows", body, bearer(acmeToken)...)
	var answer struct {
		Error struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			Rule     string `json:"rule"`
			Problems []struct {
				In      string `json:"in"`
				Pointer string `json:"pointer"`
			} `json:"problems"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &answer); err != nil {
		t.Fatal(err)
	}
	e := answer.Error
	if r.Status != http.StatusForbidden || e.Code != "permission_denied" || e.Rule != `acme/client deny "tool_files_*"` ||
		len(e.Problems) != 1 || e.Problems[0].Pointer != "/plan/steps/1/capability" || !strings.Contains(e.Message, e.Rule) {
		t.Fatalf("denied plan: %d %s", r.Status, r.Body)
	}

	sub := s.mustSubmit(t, map[string]any{"plan": plan("a:echo")}, bearer(acmeToken)...)
	_, frames := s.mustFollow(t, "/v1/workflows/"+sub.WorkflowID+"/events", bearer(acmeToken)...)
	if got := frames[len(frames)-1].Type; got != "complete" {
		t.Fatalf("allowed plan ended %s", got)
	}
	if cp := s.state(t, "/v1/workflows/"+sub.WorkflowID, bearer(acmeToken)...); cp["role"] != "client" {
		t.Fatalf("the checkpoint's role is %v, want client", cp["role"])
	}

	// The admin's role has no rules: the same plan passes the gateway.
	r = s.mustDo(t, http.MethodPost, "/v1/workflows", body, append(bearer(adminToken), gateway.TenantHeader, "acme")...)
	if r.Status != http.StatusAccepted {
		t.Fatalf("admin's plan: %d %s", r.Status, r.Body)
	}
}
