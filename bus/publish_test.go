package bus_test

import (
	"strings"
	"testing"

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
	_, err = env.Bus.Publish(testCtx(t), subj, ev, ev.ID)
	if err == nil || !strings.HasPrefix(err.Error(), "bus: publish ") || !strings.Contains(err.Error(), subj) {
		t.Fatalf("Publish to %s = %v, want a \"bus: publish\" error naming the subject", subj, err)
	}
}
