package orchestrator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	engine "github.com/agentbus/agentbus/workflow"
)

// TestOutboxSentLaterIsKeptUntilStored: a transition that handed a step
// back sends its outbox without waiting (flush with later). The checkpoint it
// stored keeps that outbox, so that a process dying before the server
// stored it leaves it for the next transition to publish; this process's
// copy drops it only once the acknowledgements are in (cached, confirm),
// and keeps it, for the transition to publish again, when they never come.
func TestOutboxSentLaterIsKeptUntilStored(t *testing.T) {
	t.Parallel()
	o := newTestOrchestrator(t, bustest.New(t), Config{ClearDelay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	status, err := json.Marshal(events.Status{State: events.StateWorking})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, wf, subject string
		stored            bool
	}{
		{"stored", "wf-stored", "agentbus.default.events.wf-stored", true},
		{"never stored", "wf-lost", "nowhere.at.all", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			key, err := subjects.CheckpointKey("default", c.wf)
			if err != nil {
				t.Fatal(err)
			}
			cp := engine.New(engine.Start{TenantID: "default", WorkflowID: c.wf}, time.Now().UTC())
			data, err := o.store(cp)
			if err != nil {
				t.Fatal(err)
			}
			rev, err := o.checkpoints.Create(ctx, key, data)
			if err != nil {
				t.Fatal(err)
			}
			cp.Outbox = []engine.Outgoing{
				{Subject: c.subject, Type: events.TypeStatus, MsgID: "default/" + c.wf + "/1", Time: time.Now().UTC(), Data: status},
				{Subject: "agentbus.default.step.echo", Type: events.TypeStepRequested, StepID: "B", MsgID: "default/" + c.wf + "/B/1", Handed: true},
			}
			if data, err = o.store(cp); err != nil {
				t.Fatal(err)
			}
			if rev, err = o.checkpoints.Update(ctx, key, data, rev); err != nil {
				t.Fatal(err)
			}
			if err := o.flush(ctx, key, cp, rev, true); err != nil {
				t.Fatal(err)
			}
			if stored, _, err := o.loadFrom(ctx, "default", c.wf, true); err != nil || len(stored.Outbox) != 2 {
				t.Fatalf("stored outbox %v (%v): want it kept", stored.Outbox, err)
			}
			wctx, wcancel := context.WithTimeout(ctx, time.Second)
			defer wcancel()
			got, gotRev, ok := o.cached(wctx, key, true)
			if !ok || gotRev != rev {
				t.Fatalf("cached %v at %d, want this process's copy at %d", ok, gotRev, rev)
			}
			if c.stored != (len(got.Outbox) == 0) {
				t.Fatalf("outbox %v after the wait: want it dropped %v", got.Outbox, c.stored)
			}
			if !c.stored {
				return
			}
			found, _, err := o.bus.FindMsgID(ctx, subjects.StreamEvents, c.subject, func(id string) bool { return id == "default/"+c.wf+"/1" }, 10)
			if err != nil || !found {
				t.Fatalf("status event stored %v (%v)", found, err)
			}
		})
	}
}
