package orchestrator

import (
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	engine "github.com/agentbus/agentbus/workflow"
)

// TestHandBackOnlyWhenNothingWaits: a step goes back with a verdict only
// on its capability's step subject (not parked), for the capability
// offered, while the offer's sender still waits, and only while nothing
// waits for the capability's workers (its last probe): a handed step must
// not overtake requests already queued for them.
func TestHandBackOnlyWhenNothingWaits(t *testing.T) {
	t.Parallel()
	o := newTestOrchestrator(t, bustest.New(t), Config{})
	cp := engine.New(engine.Start{TenantID: "default", WorkflowID: "wf"}, time.Now().UTC())
	req := func(subject string) engine.Effects {
		return engine.Effects{Outbox: []engine.Outgoing{
			{Subject: "agentbus.default.events.wf", Type: events.TypeStatus, MsgID: "default/wf/1"},
			{Subject: subject, Type: events.TypeStepRequested, StepID: "B", MsgID: "default/wf/B/1"},
		}}
	}
	soon := func() *offer { return &offer{capability: "echo", until: time.Now().Add(time.Second)} }
	setProbe := func(pending, queued uint64) {
		o.admission.mu.Lock()
		o.admission.probes["echo"] = &probe{at: time.Now(), load: bus.Load{Pending: pending}, queued: queued, bound: true}
		o.admission.mu.Unlock()
	}
	for _, c := range []struct {
		name            string
		subject         string
		off             *offer
		pending, queued uint64
		handed          bool
	}{
		{"idle", "agentbus.default.step.echo", soon(), 0, 0, true},
		{"requests wait for the workers", "agentbus.default.step.echo", soon(), 3, 0, false},
		{"steps wait for admission", "agentbus.default.step.echo", soon(), 0, 2, false},
		{"parked", "agentbus.default.queue.echo.0", soon(), 0, 0, false},
		{"another capability", "agentbus.default.step.summarize", soon(), 0, 0, false},
		{"no offer", "agentbus.default.step.echo", nil, 0, 0, false},
		{"the sender stops waiting", "agentbus.default.step.echo", &offer{capability: "echo", until: time.Now().Add(offerMargin / 2)}, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			setProbe(c.pending, c.queued)
			eff := req(c.subject)
			env := o.handBack(cp, &eff, c.off)
			if (env != nil) != c.handed || eff.Outbox[1].Handed != c.handed || eff.Outbox[0].Handed {
				t.Fatalf("handed back %v, marked %v/%v; want %v", env, eff.Outbox[0].Handed, eff.Outbox[1].Handed, c.handed)
			}
			if c.handed && (env.ID != "default/wf/B/1" || env.StepID != "B" || env.Type != events.TypeStepRequested) {
				t.Errorf("handed back %+v, want B's request", env)
			}
			if got := published(eff.Outbox); c.handed && (len(got) != 1 || got[0].Type != events.TypeStatus) || !c.handed && len(got) != 2 {
				t.Errorf("published %v", got)
			}
		})
	}
}
