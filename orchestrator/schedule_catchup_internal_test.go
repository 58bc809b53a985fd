package orchestrator

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schedule"
	"github.com/agentbus/agentbus/subjects"
)

// TestScheduleCatchUp: a scheduled fire after slots no server fired (all
// were down past them) starts, before its own, those its catch-up window
// covers, oldest first, and none older; a second delivery of the fire
// starts nothing again. (The fire is handed to the handler as the server
// would deliver it: a server refuses a publish carrying its own
// Nats-Schedule-Next header.)
func TestScheduleCatchUp(t *testing.T) {
	env := bustest.New(t)
	o := newTestOrchestrator(t, env, Config{})
	ctx := context.Background()
	sp := schedule.Spec{ScheduleID: "catchup", Cron: "* * * * * *", Overlap: schedule.OverlapAllowAll, CatchupWindow: "10s",
		Workflow: schedule.Template{Query: "hello"}}
	current, err := o.schedules.Create(ctx, "default", sp, time.Now().Add(-time.Minute)) // armed a minute ago
	if err != nil {
		t.Fatal(err)
	}
	// This orchestrator does not run: the server's own fires wait in
	// their stream unhandled, and the test disarms the schedule and fires
	// by hand, as a server back after an outage would.
	armed, _ := subjects.Schedule("default", "catchup")
	if err := env.Bus.DisarmSchedule(ctx, armed); err != nil {
		t.Fatal(err)
	}
	// Where the schedule stood when every server went down: its last
	// scheduled slot 30 s ago.
	before := time.Now().Truncate(time.Second).Add(-30 * time.Second)
	if _, err := o.schedules.UpdateState(ctx, "default", "catchup", func(st *schedule.State) bool {
		st.LastScheduled, st.Recent, st.LastWorkflowID, st.Started = &before, nil, "", 0
		return true
	}); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Second)
	fireEnv, err := events.New(events.TypeScheduleFire, "default.catchup.test", "/test", "default", "", "",
		events.ScheduleFire{ScheduleID: "catchup", Kind: events.FireScheduled, Generation: current.Generation})
	if err != nil {
		t.Fatal(err)
	}
	fire, _ := subjects.Fire("default", "catchup")
	d := bus.StoredDelivery(bus.StoredMessage{Envelope: fireEnv, Subject: fire,
		Header: map[string][]string{"Nats-Schedule-Next": {slot.Add(time.Second).UTC().Format(time.RFC3339Nano)}}})
	for range 2 { // a second delivery of the same fire
		if err := o.handleFire(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	st, _, err := o.schedules.State(ctx, "default", "catchup")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for s := 9; s >= 0; s-- {
		want = append(want, "catchup-"+strconv.FormatInt(slot.Add(-time.Duration(s)*time.Second).Unix(), 10))
	}
	// The window is 10 s at the handling's now, a little after slot: the
	// slot 10 s before it may be in or out; 9 s to 0 s before are in.
	got := st.Recent
	if len(got) == len(want)+1 {
		if got[0] != "catchup-"+strconv.FormatInt(slot.Add(-10*time.Second).Unix(), 10) {
			t.Fatalf("runs %v: the first is not the slot 10 s back", got)
		}
		got = got[1:]
	}
	if len(got) != len(want) || st.Started != uint64(len(st.Recent)) {
		t.Fatalf("started %d, runs %v, want %v (oldest first, once each)", st.Started, st.Recent, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("runs %v, want %v (oldest first)", got, want)
		}
	}
	if st.LastScheduled == nil || !st.LastScheduled.Equal(slot) {
		t.Fatalf("last scheduled slot %v, want %v", st.LastScheduled, slot)
	}
}
