package memory_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/memory"
)

func askAs(t *testing.T, a *memory.Agent, tenant, user, input string) memory.Output {
	t.Helper()
	out, _ := kittest.Run[memory.Output](t, a, agentkit.OutputSchema(memory.Capability), agents.Request{TenantID: tenant, User: user,
		WorkflowID: "w1", StepID: "memory", Capability: "memory", Attempt: 1, Delivery: 1, Input: json.RawMessage(input)})
	return out
}

// A user's facts are kept under "<tenant>.<user>." and recalled for that
// user only: never for another user of the tenant, nor for a request
// without a user; tenant-wide facts are not recalled for a user either.
func TestUsersNeverSeeEachOther(t *testing.T) {
	a := newAgent(t, memory.Config{KV: bucket(t)})
	ada := askAs(t, a, "acme", "ada", `{"query":"my name is Ada and I work with Go","mode":"remember"}`)
	if len(ada.Stored) != 2 || !strings.HasPrefix(ada.Stored[0].Key, "acme.ada.") {
		t.Fatalf("ada stored %+v", ada.Stored)
	}
	askAs(t, a, "acme", "", `{"query":"remember that the demo is on Friday","mode":"remember"}`)
	for _, tc := range []struct {
		user string
		want []string
	}{
		{"ada", []string{"name=ada", "works_with=go"}},
		{"bob", nil},
		{"", []string{"note=demo is on friday"}},
	} {
		got := askAs(t, a, "acme", tc.user, `{"query":"what do you remember about me","mode":"recall"}`)
		if objs := objects(got.Recalled); !slices.Equal(objs, tc.want) || got.Total != len(tc.want) {
			t.Errorf("user %q recalls %v (total %d), want %v", tc.user, objs, got.Total, tc.want)
		}
	}
	// The same fact said by two users is two facts.
	bob := askAs(t, a, "acme", "bob", `{"query":"my name is Ada","mode":"remember"}`)
	if len(bob.Stored) != 1 || !strings.HasPrefix(bob.Stored[0].Key, "acme.bob.") {
		t.Fatalf("bob stored %+v (known %+v)", bob.Stored, bob.Known)
	}
}
