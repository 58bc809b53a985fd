package orchestrator_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/agents/entities"
	"github.com/agentbus/agentbus/agents/ingest"
	"github.com/agentbus/agentbus/agents/search"
	"github.com/agentbus/agentbus/agents/selectweb"
	"github.com/agentbus/agentbus/agents/websearch"
	"github.com/agentbus/agentbus/agents/websearch/websearchtest"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/workflow"
)

// webPages are what the fake provider finds: two good pages (one a PDF),
// one too thin to keep, one asking not to be indexed. Each good page
// holds a word found nowhere else.
var webPages = []websearchtest.Page{
	{URL: "https://nats.example/blog/batch-2026?utm_source=feed", Title: "NATS 2026: atomic batch publishing",
		Snippet: "The latest NATS release adds atomic batch publishing to JetStream streams.",
		Content: "The latest NATS release adds atomic batch publishing to JetStream streams. A batch commits all of its messages or none of them, which the release notes call the quorvex guarantee."},
	{URL: "https://docs.example/jetstream-batches.pdf", Title: "JetStream batches (PDF)",
		Snippet: "A specification of JetStream batch publishing: headers, limits and the commit protocol.",
		Content: "JetStream batch publishing is specified here: a batch carries a Nats-Batch-Id header and ends with a commit. The specification names its limits the plimsett limits."},
	{URL: "https://thin.example/x", Title: "Thin", Snippet: "Too short."},
	{URL: "https://hidden.example/y", Title: "Hidden", Snippet: "A page about NATS batch publishing that asks search engines to keep it out.",
		Content: `<meta name="robots" content="noindex">NATS batch publishing notes.`},
}

const webKey = "tvly-test-key"

// webStack is a server, an orchestrator with the default planner and one
// worker serving echo, the simple flow, the web graph (web_search on the fake
// Tavily), ingest, on one embedded index.
type webStack struct {
	*stack
	fake  *websearchtest.Fake
	index *embedded.Index
}

func startWebStack(t *testing.T) *webStack {
	t.Helper()
	env := bustest.New(t)
	ix, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	fake := websearchtest.New(t, webKey, webPages...)
	provider, err := websearch.NewProvider(websearch.ProviderConfig{Name: websearch.ProviderTavily, BaseURL: fake.URL, APIKey: webKey,
		Retry: websearch.Retry{Attempts: 3, Base: 50 * time.Millisecond, MaxWait: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := websearch.New(websearch.Config{Provider: provider, RawContent: true})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := selectweb.New(selectweb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ing, err := ingest.New(ingest.Config{Bus: env.Bus, Store: ix})
	if err != nil {
		t.Fatal(err)
	}
	srch, err := search.New(search.Config{Backend: ix})
	if err != nil {
		t.Fatal(err)
	}
	comp, err := compose.New(compose.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := entities.New(entities.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &webStack{stack: startOn(t, env, ws, sel, ing, srch, comp, ents), fake: fake, index: ix}
}

// found reports whether the tenant's index finds word.
func (s *webStack) found(t *testing.T, tenant, word string) bool {
	t.Helper()
	hits, err := s.index.Search(t.Context(), tenant, s.index.Profiles()[0], retrieval.Query{Text: word, K: 5})
	if err != nil && !errors.Is(err, retrieval.ErrNotFound) {
		t.Fatal(err)
	}
	for _, h := range hits {
		if strings.Contains(strings.ToLower(h.Text), word) {
			return true
		}
	}
	return false
}

func (s *webStack) awaitApproval(t *testing.T, tenant, wf string) *workflow.Checkpoint {
	t.Helper()
	waitFor(t, wf+" awaits approval of select", func() bool {
		cp, err := s.orch.Checkpoint(t.Context(), tenant, wf)
		return err == nil && cp.Status == events.StateInputRequired
	})
	cp, err := s.orch.Checkpoint(t.Context(), tenant, wf)
	if err != nil {
		t.Fatal(err)
	}
	if a := cp.Tasks["select"].Approval; a == nil || a.State != workflow.ApprovalPending {
		t.Fatalf("select approval %+v", a)
	}
	if st := cp.Tasks["ingest"].Status; st != events.StateSubmitted {
		t.Fatalf("ingest is %s before the decision", st)
	}
	return cp
}

const webQuery = "what does the latest NATS release say about batch publishing"

func TestWebGraphEndToEnd(t *testing.T) {
	s := startWebStack(t)

	t.Run("approve: ingested, searchable by its tenant only, cited by URL", func(t *testing.T) {
		// The provider rate-limits the first search: the step waits as told and goes on.
		s.fake.FailNext(websearchtest.Failure{Status: http.StatusTooManyRequests, RetryAfter: "1"})
		submit(t, s.env.Bus, "acme", "webyes", events.WorkflowSubmitted{Query: webQuery})
		cp := s.awaitApproval(t, "acme", "webyes")
		var sel selectweb.Output
		if err := json.Unmarshal(cp.Tasks["select"].Output, &sel); err != nil {
			t.Fatal(err)
		}
		if len(sel.Documents) != 2 || sel.Documents[0].ID != "https://docs.example/jetstream-batches.pdf" ||
			sel.Documents[1].ID != "https://nats.example/blog/batch-2026" || len(sel.Dropped) != 2 {
			t.Fatalf("select output %s", cp.Tasks["select"].Output)
		}
		if s.found(t, "acme", "quorvex") {
			t.Fatal("a web page was indexed before the approval")
		}
		if res := control(t, s.env.Bus, "acme", "webyes", events.Control{Action: events.ActionApprove, Reason: "good sources"}); !res.Applied {
			t.Fatalf("approve: %+v", res)
		}
		rs := collect(t, s.env.Bus, "acme", "webyes")
		end := last(t, rs)
		if end.Type != events.TypeComplete {
			t.Fatalf("ended %s: %s", end.Type, describe(rs))
		}
		var done events.Complete
		if err := json.Unmarshal(end.Data, &done); err != nil {
			t.Fatal(err)
		}
		var ing ingest.Output
		if err := json.Unmarshal(done.Outputs["ingest"], &ing); err != nil || ing.Documents != 2 {
			t.Fatalf("ingest output %s (%v)", done.Outputs["ingest"], err)
		}
		for _, word := range []string{"quorvex", "plimsett"} {
			if !s.found(t, "acme", word) {
				t.Errorf("%q is not searchable in acme after the approval", word)
			}
			if s.found(t, "other", word) {
				t.Errorf("%q, acme's, is found in tenant other", word)
			}
		}
		if _, err := s.index.Document(t.Context(), "other", "https://nats.example/blog/batch-2026"); !errors.Is(err, retrieval.ErrNotFound) {
			t.Errorf("tenant other has acme's web page: %v", err)
		}
		var ans compose.Output
		if err := json.Unmarshal(done.Outputs["summarize"], &ans); err != nil {
			t.Fatal(err)
		}
		urls := 0
		for _, c := range ans.Citations {
			if strings.HasPrefix(c.URL, "https://") {
				urls++
			}
		}
		if urls == 0 || !strings.Contains(ans.Answer, "https://") {
			t.Fatalf("the answer cites no web page by URL: %s %+v", ans.Answer, ans.Citations)
		}
		if n := len(s.fake.Requests()); n != 2 {
			t.Fatalf("the provider saw %d requests, want a 429 and its retry", n)
		}
	})

	t.Run("reject: nothing ingested", func(t *testing.T) {
		s.fake.FailAlways(nil)
		submit(t, s.env.Bus, "beta", "webno", events.WorkflowSubmitted{Query: webQuery})
		s.awaitApproval(t, "beta", "webno")
		if res := control(t, s.env.Bus, "beta", "webno", events.Control{Action: events.ActionReject, Reason: "not these"}); !res.Applied {
			t.Fatalf("reject: %+v", res)
		}
		end := last(t, collect(t, s.env.Bus, "beta", "webno"))
		if end.Type != events.TypeError || !strings.Contains(string(end.Data), events.CodeRejected) {
			t.Fatalf("ended %s %s", end.Type, end.Data)
		}
		cp, _ := s.orch.Checkpoint(t.Context(), "beta", "webno")
		if cp.Tasks["ingest"].Attempt != 0 {
			t.Fatalf("ingest was dispatched after a rejection: %+v", cp.Tasks["ingest"])
		}
		if s.found(t, "beta", "quorvex") || s.found(t, "beta", "plimsett") {
			t.Fatal("a rejected web page was indexed")
		}
	})

	t.Run("auto_ingest: no approval asked", func(t *testing.T) {
		submit(t, s.env.Bus, "gamma", "webauto", events.WorkflowSubmitted{Query: webQuery,
			Metadata: map[string]string{orchestrator.MetadataAutoIngest: "true"}})
		if end := last(t, collect(t, s.env.Bus, "gamma", "webauto")); end.Type != events.TypeComplete {
			t.Fatalf("ended %s %s", end.Type, end.Data)
		}
		if !s.found(t, "gamma", "quorvex") {
			t.Fatal("auto-ingested page not searchable")
		}
	})

	t.Run("nothing worth keeping: no decision asked, the answer stands", func(t *testing.T) {
		s.fake.SetPages(webPages[2:]...) // too thin, and noindex
		t.Cleanup(func() { s.fake.SetPages(webPages...) })
		submit(t, s.env.Bus, "epsilon", "webnone", events.WorkflowSubmitted{Query: webQuery})
		rs := collect(t, s.env.Bus, "epsilon", "webnone")
		if end := last(t, rs); end.Type != events.TypeComplete {
			t.Fatalf("ended %s: %s", end.Type, describe(rs))
		}
		cp, _ := s.orch.Checkpoint(t.Context(), "epsilon", "webnone")
		if a := cp.Tasks["select"].Approval; a == nil || a.State != workflow.ApprovalAuto {
			t.Fatalf("select approval %+v", a)
		}
		if cp.Tasks["summarize"].Status != events.StateCompleted {
			t.Fatalf("summarize %s", cp.Tasks["summarize"].Status)
		}
	})

	t.Run("provider 401: a failed step naming the key variable", func(t *testing.T) {
		s.fake.FailAlways(&websearchtest.Failure{Status: http.StatusUnauthorized})
		t.Cleanup(func() { s.fake.FailAlways(nil) })
		before := len(s.fake.Requests())
		submit(t, s.env.Bus, "delta", "webkey", events.WorkflowSubmitted{Query: webQuery})
		rs := collect(t, s.env.Bus, "delta", "webkey")
		end := last(t, rs)
		if end.Type != events.TypeError {
			t.Fatalf("ended %s: %s", end.Type, describe(rs))
		}
		var e events.Error
		if err := json.Unmarshal(end.Data, &e); err != nil {
			t.Fatal(err)
		}
		if e.StepID != "web_search" || !strings.Contains(e.Message, websearch.TavilyKeyEnv) || !strings.Contains(e.Message, "401") {
			t.Fatalf("error %+v", e)
		}
		if n := len(s.fake.Requests()) - before; n != 1 {
			t.Fatalf("a refused key was tried %d times", n)
		}
	})
}
