package retention_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/retention"
	"github.com/agentbus/agentbus/sessions"
)

// TestSweepPurgesEndedKeepsRunning: with completed workflows kept a
// minute and failed ones two, a sweep at +90s purges the completed one
// whole (checkpoint, events, control record, session turn, upload) and
// nothing else; at +10m the failed and canceled ones go too; the running
// and the waiting-for-input ones, older than every period, stay.
func TestSweepPurgesEndedKeepsRunning(t *testing.T) {
	x := newWorld(t)
	ctx := t.Context()
	done := wf{tenant: "acme", id: "done", status: events.StateCompleted, session: "s1", upload: true, revisions: 5, events: 7}
	kept := wf{tenant: "acme", id: "next", status: events.StateFailed, session: "s1", revisions: 2, events: 2}
	failed := wf{tenant: "acme", id: "failed", status: events.StateFailed, revisions: 3, events: 3}
	canceled := wf{tenant: "beta", id: "canceled", status: events.StateCanceled, revisions: 2, events: 1}
	running := wf{tenant: "acme", id: "running", status: events.StateWorking, session: "s2", revisions: 4, events: 4}
	waiting := wf{tenant: "beta", id: "waiting", status: events.StateInputRequired, revisions: 2, events: 2}
	for _, w := range []wf{done, kept, failed, canceled, running, waiting} {
		x.seed(ctx, w)
	}
	now := time.Now()
	reg := prometheus.NewRegistry()
	m, err := retention.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := x.sweeper(retention.Policy{Completed: time.Minute, Failed: 2 * time.Minute}, &now, func(c *retention.Config) { c.Metrics = m })
	r, err := s.Once(ctx)
	if err != nil || !r.Held || r.Purged != 0 {
		t.Fatalf("pass at +0: %+v, %v", r, err)
	}
	now = now.Add(90 * time.Second)
	if r, err = s.Once(ctx); err != nil || r.Purged != 1 {
		t.Fatalf("pass at +90s: %+v, %v; want 1 purged", r, err)
	}
	if l := x.left(ctx, done); l != (left{}) {
		t.Errorf("completed workflow after its retention: left %+v, want nothing", l)
	}
	for _, w := range []wf{kept, failed, canceled, running, waiting} {
		if l := x.left(ctx, w); !l.checkpoint || !l.events || !l.control {
			t.Errorf("%s at +90s: left %+v, want all", w.id, l)
		}
	}
	if l := x.left(ctx, kept); !l.turn {
		t.Errorf("the session lost the later turn too")
	}
	sess, err := x.sessions.Load(ctx, "acme", "", "s1")
	if err != nil || len(sess.Turns) != 1 || sess.Turns[0].N != 1 {
		t.Errorf("session s1 after the purge of its first turn: %+v, %v; want one turn numbered 1", sess, err)
	}

	now = now.Add(10 * time.Minute)
	for range 2 {
		if r, err = s.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []wf{done, kept, failed, canceled} {
		if l := x.left(ctx, w); l != (left{}) {
			t.Errorf("%s at +11m: left %+v, want nothing", w.id, l)
		}
	}
	for _, w := range []wf{running, waiting} {
		if l := x.left(ctx, w); !l.checkpoint || !l.events || !l.control || w.session != "" && !l.turn {
			t.Errorf("%s (not ended) at +11m: left %+v, want all of it", w.id, l)
		}
	}
	if _, err := x.sessions.Load(ctx, "acme", "", "s1"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("session s1 with no turn left: %v, want it removed", err)
	}
	if got := counts(t, reg); got != "canceled=1 completed=1 failed=2" {
		t.Errorf("agentbus_retention_workflows_purged_total: %s, want canceled=1 completed=1 failed=2", got)
	}
}

// TestSweepPerTenant: a tenant's own periods win over the defaults, and
// forever keeps a workflow whatever its age.
func TestSweepPerTenant(t *testing.T) {
	x := newWorld(t)
	ctx := t.Context()
	acme := wf{tenant: "acme", id: "a", status: events.StateCompleted, events: 1}
	beta := wf{tenant: "beta", id: "b", status: events.StateCompleted, events: 1}
	gamma := wf{tenant: "gamma", id: "c", status: events.StateFailed, events: 1}
	for _, w := range []wf{acme, beta, gamma} {
		x.seed(ctx, w)
	}
	table, err := retention.ParseTable([]byte(`{"acme": {"completed": "2m"}, "gamma": {"failed": "forever"}}`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(90 * time.Second)
	s := x.sweeper(retention.Policy{Completed: time.Minute, Failed: time.Minute, Tenants: table}, &now)
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if x.left(ctx, beta).checkpoint || !x.left(ctx, acme).checkpoint || !x.left(ctx, gamma).checkpoint {
		t.Fatalf("at +90s: beta %+v acme %+v gamma %+v; want beta gone only", x.left(ctx, beta), x.left(ctx, acme), x.left(ctx, gamma))
	}
	now = now.Add(time.Hour)
	if _, err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if x.left(ctx, acme).checkpoint || !x.left(ctx, gamma).checkpoint {
		t.Fatalf("at +1h: acme %+v gamma %+v; want acme gone, gamma kept forever", x.left(ctx, acme), x.left(ctx, gamma))
	}
}

// TestSweepBounded: a pass looks at MaxPerPass workflows at most and the
// next goes on from there.
func TestSweepBounded(t *testing.T) {
	x := newWorld(t)
	ctx := t.Context()
	for i := range 7 {
		x.seed(ctx, wf{tenant: "acme", id: fmt.Sprintf("w%d", i), status: events.StateCompleted, revisions: 2, events: 1})
	}
	now := time.Now().Add(time.Hour)
	s := x.sweeper(retention.Policy{Completed: time.Minute}, &now, func(c *retention.Config) { c.MaxPerPass = 3 })
	var got []int
	for range 4 {
		r, err := s.Once(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Purged)
	}
	if fmt.Sprint(got) != "[3 3 1 0]" {
		t.Errorf("purged per pass %v, want [3 3 1 0]", got)
	}
}

// TestSweepOneAtATime: of two sweepers, one holds the lease and sweeps.
func TestSweepOneAtATime(t *testing.T) {
	x := newWorld(t)
	ctx := t.Context()
	now := time.Now()
	a := x.sweeper(retention.Policy{}, &now)
	b := x.sweeper(retention.Policy{}, &now)
	ra, err := a.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !ra.Held || rb.Held {
		t.Errorf("held: a %v b %v, want a only", ra.Held, rb.Held)
	}
	if ra, _ = a.Once(ctx); !ra.Held {
		t.Error("the holder lost its lease on its next pass")
	}
}

// TestPurge: a running workflow is refused naming its status and stays;
// an ended one goes whole; an unknown one is ErrNotFound; a purge that
// stopped after its fence is finished by the next.
func TestPurge(t *testing.T) {
	x := newWorld(t)
	ctx := t.Context()
	running := wf{tenant: "acme", id: "r", status: events.StateWorking, revisions: 2, events: 2}
	ended := wf{tenant: "acme", id: "e", status: events.StateFailed, session: "s", upload: true, payloads: 2, revisions: 3, events: 3}
	half := wf{tenant: "acme", id: "h", status: events.StateCompleted, revisions: 2, events: 2}
	// "e-2"'s payloads share "acme/e" with "e"'s, not "acme/e/".
	neighbour := wf{tenant: "acme", id: "e-2", status: events.StateCompleted, payloads: 1, revisions: 1}
	for _, w := range []wf{running, ended, half, neighbour} {
		x.seed(ctx, w)
	}
	now := time.Now()
	p := x.sweeper(retention.Policy{}, &now).Purger()
	_, err := p.Purge(ctx, "acme", "r")
	var re *retention.RunningError
	if !errors.As(err, &re) || re.Status != events.StateWorking || !errors.Is(err, retention.ErrRunning) {
		t.Errorf("purge of a running workflow: %v, want a *RunningError saying working", err)
	}
	if l := x.left(ctx, running); !l.checkpoint || !l.events {
		t.Errorf("running workflow after a refused purge: %+v", l)
	}
	got, err := p.Purge(ctx, "acme", "e")
	if err != nil || got.Status != events.StateFailed || got.Events != 3 || got.Uploads != 1 || got.Payloads != 2 || !got.Turn || got.Revisions < 3 {
		t.Errorf("purge: %+v, %v", got, err)
	}
	if l := x.left(ctx, ended); l != (left{}) {
		t.Errorf("after purge: left %+v", l)
	}
	if l := x.left(ctx, neighbour); !l.payload || !l.checkpoint {
		t.Errorf("a neighbour's payload went with the purge: %+v", l)
	}
	if _, err := p.Purge(ctx, "acme", "e"); !errors.Is(err, retention.ErrNotFound) {
		t.Errorf("purge again: %v, want ErrNotFound", err)
	}
	// The fence alone: as if the purger died after it.
	e, err := x.cps.Get(ctx, "acme.h")
	if err != nil {
		t.Fatal(err)
	}
	if err := x.cps.DeleteIf(ctx, "acme.h", e.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Purge(ctx, "acme", "h"); err != nil {
		t.Errorf("finishing a half-done purge: %v", err)
	}
	if l := x.left(ctx, half); l != (left{}) {
		t.Errorf("after finishing: left %+v", l)
	}
}

// counts reads agentbus_retention_workflows_purged_total from reg as
// "status=n …", in label order.
func counts(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, mf := range mfs {
		if mf.GetName() != "agentbus_retention_workflows_purged_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			parts = append(parts, fmt.Sprintf("%s=%g", m.GetLabel()[0].GetValue(), m.GetCounter().GetValue()))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
