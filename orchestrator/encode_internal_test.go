package orchestrator

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// chainCheckpoint is a 10-step chain's checkpoint halfway: five steps
// done with outputs, the sixth's request in the outbox.
func chainCheckpoint(t testing.TB) *workflow.Checkpoint {
	t.Helper()
	plan := events.Plan{}
	for i := range 10 {
		s := events.PlanStep{ID: fmt.Sprintf("s%d", i), Capability: "echo", Input: json.RawMessage(`{"q": "what did Ada Lovelace write in 1843?"}`)}
		if i > 0 {
			s.DependsOn = []string{fmt.Sprintf("s%d", i-1)}
		}
		plan.Steps = append(plan.Steps, s)
	}
	now := time.Now()
	cp := workflow.New(workflow.Start{TenantID: "acme", WorkflowID: "wf-1", Query: "q"}, now)
	pol := workflow.Policy{ApprovalThreshold: 0.85, StepLease: time.Minute}
	eff, err := workflow.Apply(cp, workflow.Planned{Plan: plan}, now, pol)
	if err != nil {
		t.Fatal(err)
	}
	cp.Outbox = eff.Outbox
	for _, s := range plan.Steps[:5] {
		out := json.RawMessage(`{"answer": "Notes on the Analytical Engine", "sources": [{"title": "Sketch of the Analytical Engine", "score": 0.93}]}`)
		eff, err := workflow.Apply(cp, workflow.Completed{StepCompleted: events.StepCompleted{StepID: s.ID, Attempt: 1, Worker: "w", Output: out}}, now, pol)
		if err != nil {
			t.Fatal(err)
		}
		cp.Outbox = eff.Outbox
	}
	return cp
}

// TestEncodeIsEncodingJSON: encode's bytes decode to what encoding/json's
// do (raw values kept as they came, not compacted), key order included.
func TestEncodeIsEncodingJSON(t *testing.T) {
	cp := chainCheckpoint(t)
	want, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encode(cp)
	if err != nil {
		t.Fatal(err)
	}
	var a, b workflow.Checkpoint
	if err := json.Unmarshal(want, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatal(err)
	}
	ra, _ := json.Marshal(&a)
	rb, _ := json.Marshal(&b)
	if string(ra) != string(rb) {
		t.Fatalf("encode differs from encoding/json:\n%s\n%s", got, want)
	}
}

// BenchmarkEncode: the checkpoint's encoding on every transition,
// encoding/json against encode.
//
//	go test -run '^$' -bench Encode ./orchestrator
func BenchmarkEncode(b *testing.B) {
	cp := chainCheckpoint(b)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(cp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encode(cp); err != nil {
				b.Fatal(err)
			}
		}
	})
}
