package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
)

func newStore(t *testing.T, cfg sessions.Config) *sessions.Store {
	t.Helper()
	cfg.Bus = bustest.New(t).Bus
	cfg.Logger = bustest.Logger(t)
	s, err := sessions.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func turn(wf, q, answer string) events.Turn {
	return events.Turn{WorkflowID: wf, Query: q, Answer: answer, Status: events.StateCompleted,
		Citations: json.RawMessage(`[{"n":1,"doc_id":"go/sync","chunk_id":"go/sync#0"}]`)}
}

// A completion redone after a crash — the same workflow appended again,
// however late — never adds a second turn; a changed outcome of the same
// workflow replaces its turn in place.
func TestAppendIsIdempotentByWorkflow(t *testing.T) {
	ctx := ctxT(t)
	s := newStore(t, sessions.Config{})
	if _, err := s.Append(ctx, "acme", "", "s1", turn("wf-1", "how does sync.RWMutex work", "RWMutex is a lock.")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Append(ctx, "acme", "", "s1", turn("wf-1", "how does sync.RWMutex work", "RWMutex is a lock.")); err != nil {
			t.Fatal(err)
		}
	}
	failed := turn("wf-2", "and its read lock?", "")
	failed.Status = events.StateFailed
	if _, err := s.Append(ctx, "acme", "", "s1", failed); err != nil {
		t.Fatal(err)
	}
	// wf-2 resumed and completed: its turn is replaced, not added.
	if _, err := s.Append(ctx, "acme", "", "s1", turn("wf-2", "and its read lock?", "RLock locks for reading.")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "acme", "", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 2 || got.Turns[0].N != 1 || got.Turns[1].N != 2 || got.Turns[1].Status != events.StateCompleted ||
		got.Turns[1].Answer != "RLock locks for reading." {
		t.Fatalf("turns = %+v", got.Turns)
	}
}

// Concurrent appends of different turns all land (compare-and-set), and
// concurrent redos of one land once.
func TestAppendConcurrent(t *testing.T) {
	ctx := ctxT(t)
	s := newStore(t, sessions.Config{MaxTurns: 100})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.Append(ctx, "acme", "ada", "s1", turn(fmt.Sprintf("wf-%d", i), "q", "a."))
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := s.Append(ctx, "acme", "ada", "s1", turn("wf-same", "q", "a."))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Load(ctx, "acme", "ada", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 21 {
		t.Fatalf("%d turns, want 21", len(got.Turns))
	}
	for i, tn := range got.Turns {
		if tn.N != i+1 {
			t.Fatalf("turn %d has N %d", i, tn.N)
		}
	}
}

func TestSummaryEveryThreeTurnsAndTrim(t *testing.T) {
	ctx := ctxT(t)
	s := newStore(t, sessions.Config{MaxTurns: 4})
	for i := 1; i <= 7; i++ {
		got, err := s.Append(ctx, "acme", "", "s1", turn(fmt.Sprintf("wf-%d", i), fmt.Sprintf("question %d", i), fmt.Sprintf("Answer %d. More.", i)))
		if err != nil {
			t.Fatal(err)
		}
		wantCovers := i / 3 * 3
		if got.SummaryCovers != wantCovers {
			t.Fatalf("after %d turns the summary covers %d, want %d", i, got.SummaryCovers, wantCovers)
		}
		if i == 3 && got.Summary != "1. question 1 — Answer 1.\n2. question 2 — Answer 2.\n3. question 3 — Answer 3." {
			t.Fatalf("summary at 3:\n%s", got.Summary)
		}
	}
	got, _ := s.Load(ctx, "acme", "", "s1")
	if got.Count() != 7 || len(got.Turns) != 4 || got.Dropped != 3 || got.Turns[0].N != 4 {
		t.Fatalf("count %d, kept %d, dropped %d, first N %d", got.Count(), len(got.Turns), got.Dropped, got.Turns[0].N)
	}
	if !strings.HasPrefix(got.Summary, "1. question 1") || !strings.Contains(got.Summary, "6. question 6 — Answer 6.") || got.SummaryBy != sessions.MethodExtractive {
		t.Fatalf("summary at 6:\n%s (by %s)", got.Summary, got.SummaryBy)
	}
	c := got.Conversation(3, "typed")
	if c.SessionID != "s1" || len(c.History) != 3 || c.History[0].N != 5 || c.Summary != got.Summary || c.OriginalQuery != "typed" {
		t.Fatalf("conversation = %+v", c)
	}
	// A long answer travels cut; the session keeps it (to MaxAnswer).
	long := strings.Repeat("word ", 1000)
	got, _ = s.Append(ctx, "acme", "", "s1", turn("wf-8", "q", long))
	c = got.Conversation(3, "")
	if n := len(c.History[2].Answer); n > sessions.ConversationAnswer || n < sessions.ConversationAnswer-10 || len(got.Turns[len(got.Turns)-1].Answer) != 4000 {
		t.Fatalf("conversation answer %d bytes, stored %d", n, len(got.Turns[len(got.Turns)-1].Answer))
	}
}

type failingSummarizer struct{}

func (failingSummarizer) Summarize(context.Context, string, []events.Turn) (string, string, error) {
	return "", "model-x", errors.New("model down")
}

func TestSummarizerFailureFallsBack(t *testing.T) {
	ctx := ctxT(t)
	s := newStore(t, sessions.Config{SummaryEvery: 1, Summarizer: failingSummarizer{}})
	got, err := s.Append(ctx, "acme", "", "s1", turn("wf-1", "q", "Done."))
	if err != nil || got.SummaryBy != sessions.MethodExtractive || got.Summary != "1. q — Done." {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// A user's session is invisible to another user and to the tenant as a
// whole, and a session of one tenant to every other.
func TestSessionsAreScoped(t *testing.T) {
	ctx := ctxT(t)
	s := newStore(t, sessions.Config{})
	if _, err := s.Append(ctx, "acme", "ada", "s1", turn("wf-1", "q", "a")); err != nil {
		t.Fatal(err)
	}
	for _, who := range []struct{ tenant, user string }{{"acme", "bob"}, {"acme", ""}, {"globex", "ada"}} {
		if _, err := s.Load(ctx, who.tenant, who.user, "s1"); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("%s/%q: err = %v, want ErrNotFound", who.tenant, who.user, err)
		}
	}
	if _, err := s.Load(ctx, "acme", "ada", "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "acme", "ada", "s2", turn("wf-2", "newer", "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "acme", "", "team", turn("wf-3", "q", "a")); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, "acme", "ada")
	if err != nil || len(list) != 2 || list[0].SessionID != "s2" || list[0].LastQuery != "newer" || list[1].SessionID != "s1" || list[1].TurnCount != 1 {
		t.Fatalf("ada's list: %+v (%v)", list, err)
	}
	if list, _ = s.List(ctx, "acme", ""); len(list) != 1 || list[0].SessionID != "team" {
		t.Fatalf("the tenant's list: %+v", list)
	}
	if list, _ = s.List(ctx, "acme", "bob"); len(list) != 0 {
		t.Fatalf("bob's list: %+v", list)
	}
	if _, err := s.Load(ctx, "acme", "", "Bad.Id"); !errors.Is(err, subjects.ErrInvalidToken) {
		t.Fatalf("bad id: %v", err)
	}
}

// recordingSummarizer sums up as "model: <base> + <queries>" and runs
// during, if set, inside its call.
type recordingSummarizer struct{ during func() }

func (r recordingSummarizer) Summarize(_ context.Context, previous string, turns []events.Turn) (string, string, error) {
	if r.during != nil {
		r.during()
	}
	var qs []string
	for _, t := range turns {
		qs = append(qs, t.Query)
	}
	return "model: [" + previous + "] + " + strings.Join(qs, ", "), "model-y", nil
}

// With a model as the Summarizer, Append stores the extractive summary
// and owes the model's; Refine writes it from the summary before and the
// turns since, once; a Refine overtaken by a newer due summary leaves it
// to that one's Refine.
func TestRefineWritesTheOwedSummary(t *testing.T) {
	ctx := ctxT(t)
	var s *sessions.Store
	during := func() {}
	s = newStore(t, sessions.Config{SummaryEvery: 1, Summarizer: recordingSummarizer{during: func() { during() }}})
	if _, err := s.Append(ctx, "acme", "", "s1", turn("wf-1", "q1", "A1.")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Append(ctx, "acme", "", "s1", turn("wf-2", "q2", "A2."))
	if err != nil || got.SummaryBy != sessions.MethodExtractive || got.Summary != "1. q1 — A1.\n2. q2 — A2." ||
		got.SummaryPending == nil || *got.SummaryPending != (sessions.Refinement{Base: "1. q1 — A1.", From: 2, Covers: 2}) {
		t.Fatalf("after two turns: %+v, %v", got, err)
	}
	if ok, err := s.Refine(ctx, "acme", "", "s1"); !ok || err != nil {
		t.Fatalf("Refine = %v, %v", ok, err)
	}
	got, _ = s.Load(ctx, "acme", "", "s1")
	if got.Summary != "model: [1. q1 — A1.] + q2" || got.SummaryBy != "model-y" || got.SummaryCovers != 2 || got.SummaryPending != nil {
		t.Fatalf("refined: %+v", got)
	}
	if ok, err := s.Refine(ctx, "acme", "", "s1"); ok || err != nil {
		t.Fatalf("a second Refine = %v, %v; want nothing to do", ok, err)
	}

	if _, err := s.Append(ctx, "acme", "", "s1", turn("wf-3", "q3", "A3.")); err != nil {
		t.Fatal(err)
	}
	during = func() {
		during = func() {}
		if _, err := s.Append(ctx, "acme", "", "s1", turn("wf-4", "q4", "A4.")); err != nil {
			t.Error(err)
		}
	}
	if ok, err := s.Refine(ctx, "acme", "", "s1"); ok || err != nil {
		t.Fatalf("an overtaken Refine = %v, %v; want it to leave the newer one", ok, err)
	}
	got, _ = s.Load(ctx, "acme", "", "s1")
	if got.SummaryCovers != 4 || got.SummaryBy != sessions.MethodExtractive || got.SummaryPending == nil || got.SummaryPending.Covers != 4 {
		t.Fatalf("after an overtaken Refine: %+v", got)
	}
	if ok, err := s.Refine(ctx, "acme", "", "s1"); !ok || err != nil {
		t.Fatalf("Refine of the newer = %v, %v", ok, err)
	}
	got, _ = s.Load(ctx, "acme", "", "s1")
	if !strings.HasSuffix(got.Summary, "] + q4") || got.SummaryCovers != 4 {
		t.Fatalf("refined at 4: %q", got.Summary)
	}
	if ok, err := s.Refine(ctx, "acme", "", "nope"); ok || err != nil {
		t.Fatalf("Refine of no session = %v, %v", ok, err)
	}
}
