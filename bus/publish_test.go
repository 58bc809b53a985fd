package bus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

func TestPublishDedup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		ids      [2]string
		wantDup  bool
		wantMsgs uint64
	}{
		{"same msgID is stored once", [2]string{events.EventKey(tenant, "w1", 1), events.EventKey(tenant, "w1", 1)}, true, 1},
		{"different msgIDs are stored twice", [2]string{events.EventKey(tenant, "w1", 1), events.EventKey(tenant, "w1", 2)}, false, 2},
		{"no msgID is never deduplicated", [2]string{"", ""}, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := bustest.New(t)
			subj, err := subjects.Events(tenant, "w1")
			if err != nil {
				t.Fatal(err)
			}
			ev := statusEvent(t, "w1", 1)
			first, err := env.Bus.Publish(testCtx(t), subj, ev, tt.ids[0])
			if err != nil {
				t.Fatalf("first publish: %v", err)
			}
			if first.Duplicate || first.Stream != subjects.StreamEvents || first.Sequence != 1 {
				t.Errorf("first publish = %+v, want a new message at sequence 1 of %s", first, subjects.StreamEvents)
			}
			second, err := env.Bus.Publish(testCtx(t), subj, ev, tt.ids[1])
			if err != nil {
				t.Fatalf("second publish: %v", err)
			}
			if second.Duplicate != tt.wantDup {
				t.Errorf("second publish Duplicate = %v, want %v", second.Duplicate, tt.wantDup)
			}
			if tt.wantDup && second.Sequence != first.Sequence {
				t.Errorf("duplicate acked with sequence %d, want the original %d", second.Sequence, first.Sequence)
			}
			if n := streamMsgs(t, env, subjects.StreamEvents); n != tt.wantMsgs {
				t.Errorf("%s holds %d messages, want %d", subjects.StreamEvents, n, tt.wantMsgs)
			}
		})
	}
}

func TestPublishRejectsInvalidEnvelope(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	subj, err := subjects.Events(tenant, "w1")
	if err != nil {
		t.Fatal(err)
	}
	ev := statusEvent(t, "w1", 1)
	ev.TenantID = "Not.A.Token"
	if _, err := env.Bus.Publish(testCtx(t), subj, ev, ev.ID); err == nil {
		t.Fatal("Publish of an envelope with an invalid tenant succeeded")
	}
	if n := streamMsgs(t, env, subjects.StreamEvents); n != 0 {
		t.Errorf("%s holds %d messages after a rejected publish, want 0", subjects.StreamEvents, n)
	}
}

func TestPublishToSubjectWithoutStreamFails(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	subj, err := subjects.Control(tenant, "w1") // core NATS only: no stream captures it
	if err != nil {
		t.Fatal(err)
	}
	ev := statusEvent(t, "w1", 1)
	// No responders is also what a stream in an election answers, so the
	// publish tries again until its context ends: a short one.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err = env.Bus.Publish(ctx, subj, ev, ev.ID)
	if err == nil || !strings.HasPrefix(err.Error(), "bus: publish ") || !strings.Contains(err.Error(), subj) {
		t.Fatalf("Publish to %s = %v, want a \"bus: publish\" error naming the subject", subj, err)
	}
}

func TestPublishBatch(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	subj, err := subjects.Events(tenant, "w1")
	if err != nil {
		t.Fatal(err)
	}
	var batch []bus.Pending
	for n := 1; n <= 5; n++ {
		ev := statusEvent(t, "w1", n)
		batch = append(batch, bus.Pending{Subject: subj, Env: ev, MsgID: ev.ID})
	}
	for round := range 2 { // the retry of a whole batch stores nothing new
		if err := env.Bus.PublishBatch(testCtx(t), batch); err != nil {
			t.Fatalf("PublishBatch round %d: %v", round+1, err)
		}
		if n := streamMsgs(t, env, subjects.StreamEvents); n != 5 {
			t.Fatalf("after round %d %s holds %d messages, want 5", round+1, subjects.StreamEvents, n)
		}
	}
	var ids []string
	err = env.Bus.Follow(testCtx(t), tenant, "w1", 0, func(_ context.Context, r bus.Record) error {
		ids = append(ids, r.Envelope.ID)
		if len(ids) == len(batch) {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if id != batch[i].MsgID {
			t.Errorf("stored order %q, want the batch's order", ids)
			break
		}
	}

	one := statusEvent(t, "w1", 6)
	if err := env.Bus.PublishBatch(testCtx(t), []bus.Pending{{Subject: subj, Env: one, MsgID: one.ID}}); err != nil {
		t.Fatalf("PublishBatch of one: %v", err)
	}
	bad := statusEvent(t, "w1", 7)
	bad.TenantID = "Not.A.Token"
	if err := env.Bus.PublishBatch(testCtx(t), []bus.Pending{{Subject: subj, Env: one, MsgID: one.ID}, {Subject: subj, Env: bad, MsgID: bad.ID}}); err == nil {
		t.Error("PublishBatch with an invalid envelope succeeded")
	}
	if err := env.Bus.PublishBatch(testCtx(t), nil); err != nil {
		t.Errorf("PublishBatch of nothing = %v, want nil", err)
	}
}
