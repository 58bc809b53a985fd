package orchestrator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	engine "github.com/agentbus/agentbus/workflow"
)

// A workflow's ending redone after a crash — the turn appended, the
// checkpoint that says so never stored, the reply handled again, perhaps
// by another orchestrator — appends the same turn again: the session
// still has it once. A later, different ending of the same workflow (a
// failed one resumed and completed) replaces it.
func TestRedoneEndingDoesNotDuplicateTheTurn(t *testing.T) {
	env := bustest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o1 := newTestOrchestrator(t, env, Config{StepLease: -1})
	o2 := newTestOrchestrator(t, env, Config{StepLease: -1})

	ending := func(status events.State) *engine.Checkpoint {
		cp := engine.New(engine.Start{TenantID: "acme", WorkflowID: "wf-1", Query: "sync.RWMutex read lock"}, time.Now().UTC())
		cp.User = "ada"
		cp.Session = &engine.SessionState{ID: "s1", Conversation: events.Conversation{SessionID: "s1", OriginalQuery: "and its read lock?"}}
		cp.Status = status
		if status == events.StateCompleted {
			cp.Result = json.RawMessage(`{"answer":"RLock locks for reading [1].","citations":[{"n":1,"doc_id":"go/sync"}]}`)
		}
		return cp
	}
	for _, o := range []*Orchestrator{o1, o1, o2} {
		if err := o.recordTurn(ctx, ending(events.StateFailed)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := o1.sessions.Load(ctx, "acme", "ada", "s1")
	if err != nil || len(s.Turns) != 1 || s.Turns[0].Status != events.StateFailed {
		t.Fatalf("after three redone endings: %+v (%v)", s.Turns, err)
	}
	cp := ending(events.StateCompleted)
	if err := o2.recordTurn(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if cp.Session.Recorded != events.StateCompleted {
		t.Fatalf("recorded %q", cp.Session.Recorded)
	}
	s, _ = o1.sessions.Load(ctx, "acme", "ada", "s1")
	if len(s.Turns) != 1 || s.Turns[0].Status != events.StateCompleted || s.Turns[0].Answer != "RLock locks for reading [1]." ||
		s.Turns[0].Query != "and its read lock?" || s.Turns[0].ResolvedQuery != "sync.RWMutex read lock" {
		t.Fatalf("after the completed ending: %+v", s.Turns)
	}
	// Recorded: a checkpoint stored after the append appends no more.
	if err := o2.recordTurn(ctx, cp); err != nil {
		t.Fatal(err)
	}
}
