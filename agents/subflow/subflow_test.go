package subflow_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/subflow"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// TestID: a child's id is a workflow id, the same for a redelivery of the
// step attempt and another for a retry or another part; it is the id the
// tool-calling agent derived before the package was shared, so that a
// step redelivered across an upgrade still finds its child.
func TestID(t *testing.T) {
	req := agents.Request{TenantID: "acme", WorkflowID: "wf-1", StepID: "ask", Attempt: 2, Delivery: 1}
	id := subflow.ID("tc-", req, "0", "1", "lookup", `{"q":"paris"}`)
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d\x00%d\x00%d\x00%s\x00%s", "acme", "wf-1", "ask", 2, 0, 1, "lookup", `{"q":"paris"}`))
	if want := "tc-" + hex.EncodeToString(h[:16]); id != want {
		t.Fatalf("ID = %s, want %s", id, want)
	}
	if err := subjects.ValidWorkflow(id); err != nil {
		t.Fatal(err)
	}
	redelivered := req
	redelivered.Delivery = 3
	retried := req
	retried.Attempt = 3
	switch {
	case subflow.ID("sw-", redelivered) != subflow.ID("sw-", req):
		t.Fatal("a redelivery has another child id")
	case subflow.ID("sw-", retried) == subflow.ID("sw-", req):
		t.Fatal("a retry has the same child id")
	case subflow.ID("sw-", req, "a") == subflow.ID("sw-", req, "b"):
		t.Fatal("two parts have the same child id")
	}
}

func TestConfig(t *testing.T) {
	_, err := subflow.New(subflow.Config{MaxDepth: -1})
	for _, want := range []string{"Bus", "Source", "max depth -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("New with a bad config: %v, want it to name %s", err, want)
		}
	}
	r, err := subflow.New(subflow.Config{Bus: bustest.New(t).Bus, Source: "/test"})
	if err != nil || r.MaxDepth() != subflow.DefaultMaxDepth {
		t.Fatalf("New with defaults: %v, max depth %d", err, r.MaxDepth())
	}
	for _, k := range []string{subflow.MetadataParentWorkflow, subflow.MetadataParentStep, subflow.MetadataDepth} {
		if !subflow.Reserved(k) {
			t.Fatalf("%s is not reserved", k)
		}
	}
	if subflow.Reserved("purpose") {
		t.Fatal("purpose is reserved")
	}
}
