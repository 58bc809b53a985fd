package sessions_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/sessions"
)

// TestForget: a forgotten turn leaves the session, the later turns are
// numbered down, the summary that covered it no longer mentions it, and
// a session left with no turn is gone.
func TestForget(t *testing.T) {
	env := bustest.New(t)
	st, err := sessions.New(sessions.Config{Bus: env.Bus, SummaryEvery: 3, History: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, w := range []string{"w1", "w2", "w3", "w4"} {
		if _, err := st.Append(ctx, "acme", "", "s", events.Turn{WorkflowID: w, Query: "question " + w, Answer: "answer " + w + ".", Status: events.StateCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := st.Forget(ctx, "acme", "", "s", "w2"); !ok || err != nil {
		t.Fatalf("Forget w2: %v, %v", ok, err)
	}
	s, err := st.Load(ctx, "acme", "", "s")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, turn := range s.Turns {
		got = append(got, turn.WorkflowID)
		if turn.N != i+1 {
			t.Errorf("turn %s numbered %d, want %d", turn.WorkflowID, turn.N, i+1)
		}
	}
	if strings.Join(got, ",") != "w1,w3,w4" || s.SummaryCovers != 2 || strings.Contains(s.Summary, "w2") || !strings.Contains(s.Summary, "w3") {
		t.Errorf("after Forget: turns %v, summary of %d %q", got, s.SummaryCovers, s.Summary)
	}
	if ok, err := st.Forget(ctx, "acme", "", "s", "w2"); ok || err != nil {
		t.Errorf("Forget again: %v, %v; want false, nil", ok, err)
	}
	for _, w := range []string{"w1", "w3", "w4"} {
		if _, err := st.Forget(ctx, "acme", "", "s", w); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Load(ctx, "acme", "", "s"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("session with no turn left: %v, want ErrNotFound", err)
	}
	if ok, err := st.Forget(ctx, "acme", "", "never", "w1"); ok || err != nil {
		t.Errorf("Forget in an unknown session: %v, %v", ok, err)
	}
}
