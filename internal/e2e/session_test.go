package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/agents/entities"
	"github.com/agentbus/agentbus/agents/memory"
	"github.com/agentbus/agentbus/agents/search"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/corpus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/subjects"
)

// Tokens of the conversation tests: two users of one tenant, and a token
// of the tenant with no user.
const (
	adaToken  = "conv-acme-ada-0123456789"
	bobToken  = "conv-acme-bob-0123456789"
	teamToken = "conv-acme-team-0123456789"
)

func conversationTokens(c *gateway.Config) {
	c.Auth.Tokens = []gateway.Token{
		{Token: adaToken, Tenant: "acme", Role: gateway.RoleClient, User: "ada"},
		{Token: bobToken, Tenant: "acme", Role: gateway.RoleClient, User: "bob"},
		{Token: teamToken, Tenant: "acme", Role: gateway.RoleClient},
	}
}

// corpusAgents are the agents a question needs (entities, memory, search,
// compose), search over an embedded index of tenant's chunks of the
// sample corpus documents ids, chunked as `agentbus index` does.
func corpusAgents(t *testing.T, env *bustest.Env, tenant string, ids ...string) []agents.Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	ch, err := retrieval.NewChunker(retrieval.ChunkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var chunks []retrieval.Chunk
	sc := bufio.NewScanner(corpus.Documents())
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var d retrieval.Document
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, d.ID) {
			chunks = append(chunks, ch.Chunk(d)...)
		}
	}
	if len(chunks) == 0 {
		t.Fatalf("no corpus document among %v", ids)
	}
	ix, err := embedded.Open(embedded.Config{Dir: filepath.Join(t.TempDir(), "index")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	if err := ix.Index(ctx, tenant, chunks); err != nil {
		t.Fatal(err)
	}

	kv, err := env.Bus.KV(ctx, subjects.BucketMemory)
	if err != nil {
		t.Fatal(err)
	}
	ent, err1 := entities.New(entities.Config{})
	mem, err2 := memory.New(memory.Config{KV: kv})
	sea, err3 := search.New(search.Config{Backend: ix})
	com, err4 := compose.New(compose.Config{})
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return []agents.Agent{ent, mem, sea, com}
}

// call sends an authenticated JSON request and decodes the answer into
// out (if not nil); it returns the status and the raw body.
func (s *stack) call(t *testing.T, method, path, token string, body, out any) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(buf.Bytes(), out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, buf.Bytes())
		}
	}
	return resp.StatusCode, buf.Bytes()
}

// answered is a finished turn: what the plan said and the composer's
// answer with its citations.
type answered struct {
	workflow string
	planned  string
	answer   string
	cited    []string // doc ids
	outputs  map[string]json.RawMessage
}

// ask submits a query as token's user in a session ("" for none) and
// follows the workflow to its end, which must be complete.
func (s *stack) ask(t *testing.T, token, session, query string) answered {
	t.Helper()
	body := map[string]any{"query": query}
	if session != "" {
		body["session_id"] = session
	}
	var sub gateway.SubmitResponse
	if code, raw := s.call(t, http.MethodPost, "/v1/workflows", token, body, &sub); code != http.StatusAccepted {
		t.Fatalf("submit %q: %d %s", query, code, raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	out := answered{workflow: sub.WorkflowID}
	var end events.Envelope
	err := s.env.Bus.Follow(ctx, "acme", sub.WorkflowID, 0, func(_ context.Context, r bus.Record) error {
		if r.Envelope.Type == events.TypeStatus {
			var st events.Status
			if json.Unmarshal(r.Envelope.Data, &st) == nil && st.StepID == "" && strings.HasPrefix(st.Message, "planned ") {
				out.planned = st.Message
			}
		}
		if r.Envelope.Type.Terminal() {
			end = r.Envelope
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("following %q: %v", query, err)
	}
	if end.Type != events.TypeComplete {
		t.Fatalf("%q ended %s: %s", query, end.Type, end.Data)
	}
	var c events.Complete
	if err := json.Unmarshal(end.Data, &c); err != nil {
		t.Fatal(err)
	}
	var res compose.Output
	if err := json.Unmarshal(c.Result, &res); err != nil {
		t.Fatalf("%q: result is not the composer's: %s", query, c.Result)
	}
	out.answer, out.outputs = res.Answer, c.Outputs
	for _, ci := range res.Citations {
		out.cited = append(out.cited, ci.DocID)
	}
	return out
}

// TestConversationThreeTurns: over HTTP, a session of three turns where
// the third ("and what about its read lock?") needs the first (on
// sync.RWMutex), past a second on something else; the third runs as the
// resolved query and is answered from go/sync; GET /v1/sessions/{id}
// lists the three turns and the summary made at the third.
func TestConversationThreeTurns(t *testing.T) {
	env := bustest.New(t)
	s := startStackOn(t, env, stackOptions{
		agents:  corpusAgents(t, env, "acme", "go/sync", "go/net/url", "go/bufio", "go/strings"),
		gateway: conversationTokens,
	})
	const session = "conv-1"

	// "the reader/writer lock" gives bm25 words to match: the embedded
	// index keeps "sync.RWMutex" as one token, which no document has.
	first := s.ask(t, adaToken, session, "how does the sync.RWMutex reader/writer lock work")
	if !slices.Contains(first.cited, "go/sync") {
		t.Fatalf("turn 1 cites %v, want go/sync:\n%s\nsearch: %s", first.cited, first.answer, first.outputs["search"])
	}
	second := s.ask(t, adaToken, session, "how do I parse a URL query string with net/url")
	if !slices.Contains(second.cited, "go/net/url") {
		t.Fatalf("turn 2 cites %v, want go/net/url", second.cited)
	}
	third := s.ask(t, adaToken, session, "and what about its read lock?")
	if !strings.Contains(third.planned, `follow-up resolved against turn 1 (sync.RWMutex): "and what about its read lock?" → "sync.RWMutex read lock"`) {
		t.Fatalf("turn 3's plan does not say it was resolved against turn 1: %q", third.planned)
	}
	if !slices.Contains(third.cited, "go/sync") {
		t.Fatalf("turn 3 cites %v, want go/sync:\n%s", third.cited, third.answer)
	}
	var state struct {
		Query   string `json:"query"`
		Session struct {
			Conversation events.Conversation `json:"conversation"`
		} `json:"session"`
	}
	if code, raw := s.call(t, http.MethodGet, "/v1/workflows/"+third.workflow, adaToken, nil, &state); code != http.StatusOK ||
		state.Query != "sync.RWMutex read lock" || state.Session.Conversation.OriginalQuery != "and what about its read lock?" ||
		len(state.Session.Conversation.History) != 2 {
		t.Fatalf("turn 3's state: %d %s", code, raw)
	}

	var got gateway.SessionResponse
	if code, raw := s.call(t, http.MethodGet, "/v1/sessions/"+session, adaToken, nil, &got); code != http.StatusOK {
		t.Fatalf("GET /v1/sessions/%s: %d %s", session, code, raw)
	}
	if got.TurnCount != 3 || len(got.Turns) != 3 || got.User != "ada" {
		t.Fatalf("session: %d turns (%d kept), user %q", got.TurnCount, len(got.Turns), got.User)
	}
	for i, want := range []struct{ workflow, query, resolved string }{
		{first.workflow, "how does the sync.RWMutex reader/writer lock work", ""},
		{second.workflow, "how do I parse a URL query string with net/url", ""},
		{third.workflow, "and what about its read lock?", "sync.RWMutex read lock"},
	} {
		tn := got.Turns[i]
		if tn.N != i+1 || tn.WorkflowID != want.workflow || tn.Query != want.query || tn.ResolvedQuery != want.resolved ||
			tn.Status != events.StateCompleted || tn.Answer == "" || !strings.Contains(string(tn.Citations), `"doc_id"`) {
			t.Errorf("turn %d: %+v", i+1, tn)
		}
	}
	if got.SummaryCovers != 3 || got.SummaryBy != "extractive" || !strings.Contains(got.Summary, "1. how does the sync.RWMutex reader/writer lock work — ") ||
		!strings.Contains(got.Summary, "3. sync.RWMutex read lock — ") {
		t.Fatalf("summary (covers %d, by %s):\n%s", got.SummaryCovers, got.SummaryBy, got.Summary)
	}
	t.Logf("turn 3 (%s) answered:\n%s\nsummary:\n%s", third.planned, third.answer, got.Summary)
	// Bob, of the same tenant, has no such session.
	if code, raw := s.call(t, http.MethodGet, "/v1/sessions/"+session, bobToken, nil, nil); code != http.StatusNotFound {
		t.Fatalf("bob reads ada's session: %d %s", code, raw)
	}
}

// TestMemoryPerUser: what one user says about themselves is recalled in
// that user's later answers, never in another user's of the same tenant,
// nor for the tenant's token that names no user.
func TestMemoryPerUser(t *testing.T) {
	env := bustest.New(t)
	s := startStackOn(t, env, stackOptions{agents: corpusAgents(t, env, "acme", "go/bufio", "go/os"), gateway: conversationTokens})

	s.ask(t, adaToken, "", "I work with Go and I live in Lisbon. How do I read a file line by line?")
	recalled := func(a answered) string {
		var out memory.Output
		if err := json.Unmarshal(a.outputs["memory"], &out); err != nil {
			t.Fatalf("memory output %s: %v", a.outputs["memory"], err)
		}
		var objs []string
		for _, f := range out.Recalled {
			objs = append(objs, f.Object)
		}
		return fmt.Sprint(objs)
	}
	for _, tc := range []struct {
		who, token string
		sees       bool
	}{{"ada", adaToken, true}, {"bob", bobToken, false}, {"the tenant's token", teamToken, false}} {
		a := s.ask(t, tc.token, "", "how do I open a file?")
		sees := strings.Contains(a.answer, "Lisbon") || strings.Contains(recalled(a), "lisbon")
		if sees != tc.sees {
			t.Errorf("%s sees ada's facts: %v (recalled %s); answer:\n%s", tc.who, sees, recalled(a), a.answer)
		}
	}
}

// TestConversationBadInput: a session_id that is not a token is a 400 at
// /session_id; an unknown session is a 404 that says which.
func TestConversationBadInput(t *testing.T) {
	s := startStackWith(t, stackOptions{gateway: conversationTokens})
	code, raw := s.call(t, http.MethodPost, "/v1/workflows", adaToken, map[string]any{"query": "hi", "session_id": "no/such thing"}, nil)
	var e struct {
		Error struct {
			Problems []struct {
				Pointer string `json:"pointer"`
			} `json:"problems"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || code != http.StatusBadRequest || len(e.Error.Problems) == 0 || e.Error.Problems[0].Pointer != "/session_id" {
		t.Fatalf("bad session_id: %d %s", code, raw)
	}
	code, raw = s.call(t, http.MethodGet, "/v1/sessions/never-started", adaToken, nil, nil)
	if code != http.StatusNotFound || !strings.Contains(string(raw), `no session \"never-started\" of user \"ada\"`) {
		t.Fatalf("unknown session: %d %s", code, raw)
	}
}
