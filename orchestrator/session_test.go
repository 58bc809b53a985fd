package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/sessions"
)

// answerer stands in for the composer: it answers {"answer", "citations"}
// and keeps every request it got.
type answerer struct {
	mu   sync.Mutex
	reqs []agents.Request
}

func (a *answerer) Card() agents.Card {
	return agents.Card{Name: "answerer", Version: "0.0.1", Capabilities: []string{"answerer"}, Description: "Test composer."}
}

func (a *answerer) Handle(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	return json.Marshal(map[string]any{
		"answer":    "## Answer\n\nAbout " + req.Query + " [1]. More detail.",
		"citations": []map[string]any{{"n": 1, "doc_id": "go/sync", "chunk_id": "go/sync#0"}},
	})
}

func (a *answerer) last(t *testing.T) agents.Request {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.reqs) == 0 {
		t.Fatal("the answerer got no request")
	}
	return a.reqs[len(a.reqs)-1]
}

// startSessions runs an orchestrator whose planner plans one answerer
// step for any query, with cfg's Rewriter.
func startSessions(t *testing.T, rewriter orchestrator.Completer) (*bustest.Env, *answerer, *sessions.Store) {
	t.Helper()
	return startSessionsWith(t, rewriter, nil)
}

// startSessionsWith is startSessions with the sessions' Summarizer (nil:
// the default).
func startSessionsWith(t *testing.T, rewriter orchestrator.Completer, summarizer sessions.Summarizer) (*bustest.Env, *answerer, *sessions.Store) {
	t.Helper()
	env := bustest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	a := &answerer{}
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{a}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	store, err := sessions.New(sessions.Config{Bus: env.Bus, Logger: log, Summarizer: summarizer})
	if err != nil {
		t.Fatal(err)
	}
	planner := orchestrator.PlannerFunc(func(_ context.Context, q string, _ []discovery.Match) (events.Plan, string, error) {
		return events.Plan{Steps: []events.PlanStep{step("answer", "answerer")}}, "test planner", nil
	})
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: log, Planner: planner, Sessions: store, Rewriter: rewriter})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	return env, a, store
}

// A session's turns reach its later workflows' steps as the conversation;
// a follow-up runs as the resolved query, the plan says so, and the
// session records every turn with its answer and citations, and a
// summary at the third.
func TestSessionTurnsAndFollowUps(t *testing.T) {
	env, a, store := startSessions(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	submit(t, env.Bus, "acme", "turn-1", events.WorkflowSubmitted{Query: "how does sync.RWMutex work", SessionID: "s1", User: "ada"})
	completed(t, collect(t, env.Bus, "acme", "turn-1"))
	if r := a.last(t); r.User != "ada" || r.Conversation == nil || r.Conversation.SessionID != "s1" || len(r.Conversation.History) != 0 {
		t.Fatalf("turn 1 request: user %q conversation %+v", r.User, r.Conversation)
	}

	submit(t, env.Bus, "acme", "turn-2", events.WorkflowSubmitted{Query: "and what about its read lock?", SessionID: "s1", User: "ada"})
	rs := collect(t, env.Bus, "acme", "turn-2")
	if why := planned(t, rs); !strings.Contains(why, `follow-up resolved against turn 1 (sync.RWMutex): "and what about its read lock?" → "sync.RWMutex read lock"`) {
		t.Fatalf("planned %q does not say how the follow-up was resolved", why)
	}
	completed(t, rs)
	r := a.last(t)
	if r.Query != "sync.RWMutex read lock" || r.Conversation.OriginalQuery != "and what about its read lock?" ||
		len(r.Conversation.History) != 1 || r.Conversation.History[0].Query != "how does sync.RWMutex work" ||
		!strings.Contains(r.Conversation.History[0].Answer, "About how does sync.RWMutex work") {
		t.Fatalf("turn 2 request: query %q conversation %+v", r.Query, r.Conversation)
	}

	submit(t, env.Bus, "acme", "turn-3", events.WorkflowSubmitted{Query: "is it fair to writers?", SessionID: "s1", User: "ada"})
	completed(t, collect(t, env.Bus, "acme", "turn-3"))
	if r := a.last(t); r.Query != "is sync.RWMutex fair to writers" || len(r.Conversation.History) != 2 {
		t.Fatalf("turn 3 request: query %q, %d turns of history", r.Query, len(r.Conversation.History))
	}

	s, err := store.Load(ctx, "acme", "ada", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Turns) != 3 || s.Turns[1].ResolvedQuery != "sync.RWMutex read lock" || s.Turns[1].Query != "and what about its read lock?" ||
		string(s.Turns[2].Citations) != `[{"chunk_id":"go/sync#0","doc_id":"go/sync","n":1}]` || s.Turns[2].Status != events.StateCompleted {
		t.Fatalf("session turns %+v", s.Turns)
	}
	if s.SummaryCovers != 3 || !strings.Contains(s.Summary, "2. sync.RWMutex read lock — About sync.RWMutex read lock.") {
		t.Fatalf("summary (covers %d):\n%s", s.SummaryCovers, s.Summary)
	}
	// Another user of the tenant, and the tenant as a whole, have no such
	// session.
	if _, err := store.Load(ctx, "acme", "bob", "s1"); err == nil {
		t.Fatal("bob reads ada's session")
	}

	// A workflow whose plan is refused is a turn too, failed.
	submit(t, env.Bus, "acme", "turn-4", events.WorkflowSubmitted{Plan: plan(step("x", "no-such-agent")), SessionID: "s1", User: "ada"})
	if end := last(t, collect(t, env.Bus, "acme", "turn-4")); end.Type != events.TypeError {
		t.Fatalf("turn 4 ended %s", end.Type)
	}
	if s, _ = store.Load(ctx, "acme", "ada", "s1"); len(s.Turns) != 4 || s.Turns[3].Status != events.StateFailed {
		t.Fatalf("after a refused plan: %+v", s.Turns)
	}
}

// With a Rewriter the follow-up is the model's rewrite; an answer that is
// not the JSON asked for falls back to the deterministic resolution, and
// the plan says why.
func TestSessionFollowUpRewrittenByTheLLM(t *testing.T) {
	m := newFakeModel(t, false, func(r chatRequest) (int, string) {
		if strings.Contains(r.Messages[1].Content, "New message: and the read lock?") {
			return 200, `{"query": "sync.RWMutex RLock read lock"}`
		}
		return 200, "no JSON here"
	})
	env, a, _ := startSessions(t, m.chat(t))
	submit(t, env.Bus, "acme", "llm-1", events.WorkflowSubmitted{Query: "how does sync.RWMutex work", SessionID: "s2"})
	completed(t, collect(t, env.Bus, "acme", "llm-1"))

	submit(t, env.Bus, "acme", "llm-2", events.WorkflowSubmitted{Query: "and the read lock?", SessionID: "s2"})
	rs := collect(t, env.Bus, "acme", "llm-2")
	if why := planned(t, rs); !strings.Contains(why, `follow-up rewritten by the LLM`) || a.last(t).Query != "sync.RWMutex RLock read lock" {
		t.Fatalf("planned %q, query %q", why, a.last(t).Query)
	}

	submit(t, env.Bus, "acme", "llm-3", events.WorkflowSubmitted{Query: "and what about its Unlock?", SessionID: "s2"})
	rs = collect(t, env.Bus, "acme", "llm-3")
	if why := planned(t, rs); !strings.Contains(why, "LLM rewrite failed (the answer is not JSON with a query") ||
		!strings.Contains(why, "follow-up resolved against turn 2") {
		t.Fatalf("planned %q", why)
	}
	if q := a.last(t).Query; q != "sync.RWMutex Unlock" {
		t.Fatalf("fallback query %q", q)
	}
}

// With the LLM summarizer the rolling summary is the model's, checked; an
// answer that is not {"summary": …} leaves the extractive one.
func TestSessionSummaryByTheLLM(t *testing.T) {
	good := true
	m := newFakeModel(t, false, func(r chatRequest) (int, string) {
		if !strings.Contains(r.Messages[1].Content, "1. asked: how does sync.RWMutex work") {
			return 200, `{"summary": "wrong prompt"}`
		}
		if good {
			return 200, `{"summary": "The user asked how sync.RWMutex works: a reader/writer lock."}`
		}
		return 200, "not JSON"
	})
	env := bustest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	store, err := sessions.New(sessions.Config{Bus: env.Bus, Logger: bustest.Logger(t), SummaryEvery: 1, Summarizer: orchestrator.LLMSummarizer{Chat: m.chat(t)}})
	if err != nil {
		t.Fatal(err)
	}
	turn := events.Turn{WorkflowID: "w1", Query: "how does sync.RWMutex work", Answer: "RWMutex is a reader/writer lock.", Status: events.StateCompleted}
	for _, id := range []string{"s1", "s2"} {
		if _, err := store.Append(ctx, "acme", "", id, turn); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := store.Refine(ctx, "acme", "", "s1"); !ok || err != nil {
		t.Fatalf("Refine = %v, %v", ok, err)
	}
	s, err := store.Load(ctx, "acme", "", "s1")
	if err != nil || s.Summary != "The user asked how sync.RWMutex works: a reader/writer lock." || !strings.Contains(s.SummaryBy, "test-model") || s.SummaryPending != nil {
		t.Fatalf("LLM summary: %q by %q, pending %+v (%v)", s.Summary, s.SummaryBy, s.SummaryPending, err)
	}
	good = false
	if ok, err := store.Refine(ctx, "acme", "", "s2"); ok || err != nil {
		t.Fatalf("Refine with a bad answer = %v, %v", ok, err)
	}
	s, err = store.Load(ctx, "acme", "", "s2")
	if err != nil || s.SummaryBy != sessions.MethodExtractive || !strings.HasPrefix(s.Summary, "1. how does sync.RWMutex work — ") || s.SummaryPending != nil {
		t.Fatalf("fallback summary: %q by %q, pending %+v (%v)", s.Summary, s.SummaryBy, s.SummaryPending, err)
	}
}

// gatedSummarizer writes its summary only once released: a model that
// takes its time.
type gatedSummarizer struct{ release chan struct{} }

func (g gatedSummarizer) Summarize(ctx context.Context, _ string, turns []events.Turn) (string, string, error) {
	select {
	case <-g.release:
		return fmt.Sprintf("slow model: %d turns", len(turns)), "slow-model", nil
	case <-ctx.Done():
		return "", "slow-model", ctx.Err()
	}
}

// A slow summarizer never holds up a workflow's ending: the workflow
// completes with the extractive summary in its session, and the model's
// replaces it later, in the background.
func TestSessionSummaryDoesNotHoldTheEnding(t *testing.T) {
	g := gatedSummarizer{release: make(chan struct{})}
	env, _, store := startSessionsWith(t, nil, g)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, q := range []string{"how does sync.RWMutex work", "what is sync.Once", "what does sync.Pool do"} {
		id := fmt.Sprintf("turn-%d", i+1)
		submit(t, env.Bus, "acme", id, events.WorkflowSubmitted{Query: q, SessionID: "slow"})
		completed(t, collect(t, env.Bus, "acme", id))
	}
	s, err := store.Load(ctx, "acme", "", "slow")
	if err != nil || s.SummaryCovers != 3 || s.SummaryBy != sessions.MethodExtractive || s.SummaryPending == nil {
		t.Fatalf("with the model still writing: summary by %q covering %d, pending %+v (%v)", s.SummaryBy, s.SummaryCovers, s.SummaryPending, err)
	}
	close(g.release)
	waitFor(t, "the model's summary in place of the extractive one", func() bool {
		s, err = store.Load(ctx, "acme", "", "slow")
		return err == nil && s.SummaryBy == "slow-model"
	})
	if s.Summary != "slow model: 3 turns" || s.SummaryPending != nil {
		t.Fatalf("refined summary %q, pending %+v", s.Summary, s.SummaryPending)
	}
}

// A canceled turn is in the session too, canceled, with no answer.
func TestSessionRecordsACanceledTurn(t *testing.T) {
	started := make(chan struct{}, 1)
	block := newFn("block", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s := startStack(t, block)
	submit(t, s.env.Bus, "acme", "to-cancel", events.WorkflowSubmitted{Plan: plan(step("A", "block")), SessionID: "s3"})
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("step A never ran")
	}
	if res := control(t, s.env.Bus, "acme", "to-cancel", events.Control{Action: events.ActionCancel}); !res.Applied {
		t.Fatalf("cancel: %+v", res)
	}
	if end := last(t, collect(t, s.env.Bus, "acme", "to-cancel")); end.Type != events.TypeCancelled {
		t.Fatalf("ended %s", end.Type)
	}
	store, err := sessions.New(sessions.Config{Bus: s.env.Bus})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := store.Load(ctx, "acme", "", "s3")
	if err != nil || len(got.Turns) != 1 || got.Turns[0].Status != events.StateCanceled || got.Turns[0].Answer != "" {
		t.Fatalf("session after a cancel: %+v (%v)", got.Turns, err)
	}
}
