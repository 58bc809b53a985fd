package workflow_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentbus/agentbus/workflow"
)

const time1 = time.Second

// clone deep-copies a checkpoint through its JSON, as the orchestrator
// reads one from the store.
func clone(t testing.TB, cp *workflow.Checkpoint) *workflow.Checkpoint {
	t.Helper()
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	var c workflow.Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

var kindNames = map[workflow.Kind]string{
	workflow.KindPlanned: "KindPlanned", workflow.KindForked: "KindForked", workflow.KindMalformed: "KindMalformed",
	workflow.KindCompleted: "KindCompleted", workflow.KindFailed: "KindFailed", workflow.KindMalformedReply: "KindMalformedReply",
	workflow.KindCancel: "KindCancel", workflow.KindApprove: "KindApprove", workflow.KindReject: "KindReject",
	workflow.KindResume: "KindResume", workflow.KindDeadline: "KindDeadline", workflow.KindLost: "KindLost",
	workflow.KindHeld: "KindHeld", workflow.KindSteppedDown: "KindSteppedDown", workflow.KindAbandoned: "KindAbandoned",
	workflow.KindNote: "KindNote", workflow.KindThrottled: "KindThrottled",
}

func kindName(k workflow.Kind) string { return kindNames[k] }
