package permissions_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/permissions"
)

const table = `{
  "acme": {
    "client": {"allow": ["tool_files_*", "search"], "deny": ["tool_files_delete*"], "requires_confirmation": ["tool_files_write"]},
    "*": {"deny": ["tool_web_*"]}
  },
  "*": {"*": {"requires_confirmation": ["tool_web_*"]}}
}`

func TestCheck(t *testing.T) {
	tb, err := permissions.Parse([]byte(table))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tenant, role, capability string
		want                     permissions.Verdict
		rule                     string
	}{
		{"acme", "client", "tool_files_read", permissions.Allowed, ""},
		{"acme", "client", "search", permissions.Allowed, ""},
		{"acme", "client", "tool_files_delete_all", permissions.Denied, `acme/client deny "tool_files_delete*"`},
		{"acme", "client", "compose", permissions.Denied, `acme/client allow ["tool_files_*", "search"] (compose matches none)`},
		{"acme", "client", "tool_files_write", permissions.Confirm, `acme/client requires_confirmation "tool_files_write"`},
		{"acme", "admin", "tool_web_fetch", permissions.Denied, `acme/* deny "tool_web_*"`},
		{"acme", "", "compose", permissions.Allowed, ""},
		{"other", "client", "tool_web_fetch", permissions.Confirm, `*/* requires_confirmation "tool_web_*"`},
		{"other", "", "tool_files_delete", permissions.Allowed, ""},
	} {
		d := tb.Check(c.tenant, c.role, c.capability)
		if d.Verdict != c.want || d.Rule != c.rule {
			t.Errorf("Check(%s, %s, %s) = %v %q, want %v %q", c.tenant, c.role, c.capability, d.Verdict, d.Rule, c.want, c.rule)
		}
	}
	var none permissions.Table
	if d := none.Check("acme", "client", "tool_x"); d.Verdict != permissions.Allowed {
		t.Errorf("the nil table: %v", d)
	}
}

func TestPlan(t *testing.T) {
	tb, err := permissions.Parse([]byte(table))
	if err != nil {
		t.Fatal(err)
	}
	p := events.Plan{Steps: []events.PlanStep{
		{ID: "read", Capability: "tool_files_read"},
		{ID: "write", Capability: "tool_files_write", Input: json.RawMessage(`{"path":"a"}`)},
		{ID: "find", Capability: "search", Fallback: "tool_files_delete"},
	}}
	_, err = tb.Plan("acme", "client", p)
	var de *permissions.DeniedError
	if !errors.As(err, &de) || !errors.Is(err, permissions.ErrDenied) || de.Pointer() != "/plan/steps/2/fallback" || de.StepID != "find" ||
		!strings.Contains(err.Error(), `deny "tool_files_delete*"`) {
		t.Fatalf("a denied fallback: %v", err)
	}
	p.Steps = p.Steps[:2]
	confirm, err := tb.Plan("acme", "client", p)
	if err != nil || len(confirm) != 1 || confirm["write"] != `acme/client requires_confirmation "tool_files_write"` {
		t.Fatalf("confirm %v, %v", confirm, err)
	}
}

func TestParseInvalid(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"acme": {"client": {"allow": "x"}}}`, "/acme/client/allow"},
		{`{"acme": {"client": {"deny": ["[a-"]}}}`, "/acme/client/deny/0"},
		{`{"Acme": {}}`, "/Acme"},
	} {
		_, err := permissions.Parse([]byte(c.doc))
		if !errors.Is(err, permissions.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want an error at %s", c.doc, err, c.want)
		}
	}
}
