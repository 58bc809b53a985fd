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
