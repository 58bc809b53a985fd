package schedule_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schedule"
	"github.com/agentbus/agentbus/subjects"
)

// fires collects the fires the server publishes, with the slot each one
// is for.
type fires struct {
	mu    sync.Mutex
	slots map[string][]time.Time // schedule id → slots, in delivery order
	kinds map[string][]string
	ch    chan struct{}
}

func collect(t *testing.T, ctx context.Context, b *bus.Bus, st *schedule.Store, tenant string) *fires {
	t.Helper()
	f := &fires{slots: map[string][]time.Time{}, kinds: map[string][]string{}, ch: make(chan struct{}, 1000)}
	go func() {
		_ = b.ConsumeTimers(ctx, bus.ConsumeConfig{Stream: subjects.StreamSchedules, Durable: "test-fires", Filter: subjects.AllFires, MaxDeliver: -1},
			func(ctx context.Context, d *bus.Delivery) error {
				var fire events.ScheduleFire
				if err := d.Envelope.Unmarshal(&fire); err != nil {
					return err
				}
				slot := time.Time{}
				if fire.Slot != nil {
					slot = *fire.Slot
				} else {
					sp, _, err := st.Get(ctx, tenant, fire.ScheduleID)
					if err != nil {
						return nil
					}
					tm, _ := sp.Check()
					if slot, err = tm.SlotOf(d.Header("Nats-Schedule-Next")); err != nil {
						t.Errorf("slot: %v", err)
					}
				}
				f.mu.Lock()
				f.slots[fire.ScheduleID] = append(f.slots[fire.ScheduleID], slot)
				f.kinds[fire.ScheduleID] = append(f.kinds[fire.ScheduleID], fire.Kind)
				f.mu.Unlock()
				f.ch <- struct{}{}
				return nil
			})
	}()
	return f
}

func (f *fires) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.slots[id])
}

func (f *fires) waitFor(t *testing.T, id string, n int, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for f.count(id) < n {
		select {
		case <-f.ch:
		case <-deadline:
			t.Fatalf("%s fired %d times within %s, want %d", id, f.count(id), within, n)
		}
	}
}

func openStore(t *testing.T) (context.Context, *bus.Bus, *schedule.Store) {
	t.Helper()
	env := bustest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := schedule.Open(ctx, env.Bus, "test")
	if err != nil {
		t.Fatal(err)
	}
	return ctx, env.Bus, st
}

func TestStoreArmsFiresPausesAndDeletes(t *testing.T) {
	ctx, b, st := openStore(t)
	f := collect(t, ctx, b, st, "acme")
	sp, err := st.Create(ctx, "acme", schedule.Spec{ScheduleID: "tick", Every: "1s", Workflow: schedule.Template{Query: "q"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if sp.Overlap != schedule.OverlapSkip || sp.Generation != 1 {
		t.Fatalf("created %+v, want overlap skip, generation 1", sp)
	}
	if _, err := st.Create(ctx, "acme", sp, time.Now()); !errors.Is(err, schedule.ErrExists) {
		t.Fatalf("second Create = %v, want ErrExists", err)
	}
	f.waitFor(t, "tick", 3, 10*time.Second)
	f.mu.Lock()
	seen := map[time.Time]bool{}
	for _, s := range f.slots["tick"] {
		if seen[s] || s.IsZero() || s.Nanosecond() != 0 {
			t.Errorf("slots %v: %v twice, zero or not whole", f.slots["tick"], s)
		}
		seen[s] = true
	}
	f.mu.Unlock()

	// Paused: disarmed, and nothing fires.
	if _, err := st.Update(ctx, "acme", "tick", time.Now(), func(s *schedule.Spec) error { s.Paused = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if armed, err := st.Armed(ctx, "acme", "tick"); err != nil || armed {
		t.Fatalf("paused: armed = %v, %v; want false", armed, err)
	}
	// Nothing fires for a slot after the pause (a fire stored before it
	// may still arrive): watch a quiet window of three slots.
	pausedAt := time.Now()
	<-time.After(3 * time.Second)
	f.mu.Lock()
	for _, s := range f.slots["tick"] {
		if s.After(pausedAt) {
			t.Errorf("a paused schedule fired for slot %s (paused at %s)", s, pausedAt)
		}
	}
	n := len(f.slots["tick"])
	f.mu.Unlock()

	// Unpaused: a new generation, armed again.
	sp, err = st.Update(ctx, "acme", "tick", time.Now(), func(s *schedule.Spec) error { s.Paused = false; return nil })
	if err != nil || sp.Generation != 2 {
		t.Fatalf("unpause: %+v, %v; want generation 2", sp, err)
	}
	f.waitFor(t, "tick", n+1, 10*time.Second)

	// Deleted: disarmed, gone.
	if err := st.Delete(ctx, "acme", "tick"); err != nil {
		t.Fatal(err)
	}
	if armed, err := st.Armed(ctx, "acme", "tick"); err != nil || armed {
		t.Fatalf("deleted: armed = %v, %v; want false", armed, err)
	}
	if _, _, err := st.Get(ctx, "acme", "tick"); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("Get after Delete = %v, want ErrNotFound", err)
	}
}

func TestStoreTriggerAndBackfill(t *testing.T) {
	ctx, b, st := openStore(t)
	f := collect(t, ctx, b, st, "acme")
	if _, err := st.Create(ctx, "acme", schedule.Spec{ScheduleID: "hourly", Cron: "0 * * * *", Paused: true, Workflow: schedule.Template{Query: "q"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	run, err := st.Trigger(ctx, "acme", "hourly", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(run) < len("hourly-manual-") || run[:14] != "hourly-manual-" {
		t.Fatalf("trigger run %q", run)
	}
	from := time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)
	runs, err := st.Backfill(ctx, "acme", "hourly", from, from.Add(10*time.Hour-time.Minute), time.Now(), schedule.OverlapAllowAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 10 || runs[0] != "hourly-1767229200" {
		t.Fatalf("backfill runs %q, want 10 from hourly-1767229200 (01:00)", runs)
	}
	// The same range again is stored once (dedup ids).
	if _, err := st.Backfill(ctx, "acme", "hourly", from, from.Add(10*time.Hour-time.Minute), time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "hourly", 11, 10*time.Second)
	if _, err := st.Backfill(ctx, "acme", "hourly", from, time.Now().Add(time.Hour), time.Now(), ""); !errors.Is(err, schedule.ErrRange) {
		t.Fatalf("backfill into the future = %v, want ErrRange", err)
	}
	if _, err := st.Backfill(ctx, "acme", "hourly", from.AddDate(-1, 0, 0), from, time.Now(), ""); !errors.Is(err, schedule.ErrRange) {
		t.Fatalf("backfill of a year of hours = %v, want ErrRange", err)
	}
}
