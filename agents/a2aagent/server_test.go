package a2aagent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// token is the bearer token the test agent wants on every request.
const token = "Bearer s3cret"

// testAgent is a real A2A agent (a2asrv over JSON-RPC on a loopback port)
// with two skills: "text.shout" answers its text upper-cased as one
// artifact; "count" reports 25/50/75 percent and streams "1", "2", "3" as
// chunks of one artifact, and with input {"hold": true} waits after the
// first chunk until its task is canceled.
type testAgent struct {
	srv  *httptest.Server
	card *a2a.AgentCard
	// cardDown makes the card answer 503 while the rest still works.
	cardDown atomic.Bool

	mu       sync.Mutex
	runs     map[string]int
	messages map[string]*a2a.Message
	started  chan a2a.TaskID // a held count task is waiting
	canceled chan a2a.TaskID // tasks/cancel arrived
}

var _ a2asrv.AgentExecutor = (*testAgent)(nil)

// startAgent serves a test agent; streaming is what its card says.
func startAgent(t *testing.T, streaming bool, skills ...a2a.AgentSkill) *testAgent {
	t.Helper()
	if skills == nil { // an empty list given on purpose is kept
		skills = []a2a.AgentSkill{
			{ID: "text.shout", Name: "Shout", Description: "Upper-cases a text.", Examples: []string{"shout hello"}, Tags: []string{"text"}},
			{ID: "count", Name: "Count", Description: "Counts to three, slowly.", Tags: []string{"numbers"}},
		}
	}
	a := &testAgent{runs: map[string]int{}, messages: map[string]*a2a.Message{},
		started: make(chan a2a.TaskID, 8), canceled: make(chan a2a.TaskID, 8)}
	mux := http.NewServeMux()
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	a.card = &a2a.AgentCard{Name: "Test Agent", Description: "An A2A agent for tests.", URL: a.srv.URL + "/rpc",
		PreferredTransport: a2a.TransportProtocolJSONRPC, ProtocolVersion: "0.3.0", Version: "1.2.3",
		Capabilities: a2a.AgentCapabilities{Streaming: streaming}, DefaultInputModes: []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"}, Skills: skills}
	mux.Handle("/rpc", authorized(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(a))))
	cardHandler := a2asrv.NewStaticAgentCardHandler(a.card)
	mux.Handle("/.well-known/agent-card.json", authorized(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.cardDown.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		cardHandler.ServeHTTP(w, r)
	})))
	return a
}

// authorized refuses a request without the token.
func authorized(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != token {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (a *testAgent) runsOf(skill string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runs[skill]
}

func (a *testAgent) messageOf(skill string) *a2a.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.messages[skill]
}

func (a *testAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	skill, _ := rc.Message.Metadata["skill_id"].(string)
	a.mu.Lock()
	a.runs[skill]++
	a.messages[skill] = rc.Message
	a.mu.Unlock()
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateSubmitted, nil)); err != nil {
			return err
		}
	}
	switch skill {
	case "text.shout":
		var text string
		for _, p := range rc.Message.Parts {
			if tp, ok := p.(a2a.TextPart); ok {
				text += tp.Text
			}
		}
		art := a2a.NewArtifactEvent(rc, a2a.TextPart{Text: strings.ToUpper(text)})
		art.Artifact.Name = "shouted"
		if err := q.Write(ctx, art); err != nil {
			return err
		}
	case "count":
		if err := a.count(ctx, rc, q); err != nil || ctx.Err() != nil {
			return err
		}
	default:
		return finish(ctx, rc, q, a2a.TaskStateFailed, "unknown skill "+skill)
	}
	return finish(ctx, rc, q, a2a.TaskStateCompleted, "")
}

// count streams the count; a held count waits for its cancel.
func (a *testAgent) count(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	hold := false
	for _, p := range rc.Message.Parts {
		if dp, ok := p.(a2a.DataPart); ok {
			in, _ := dp.Data["input"].(map[string]any)
			hold, _ = in["hold"].(bool)
		}
	}
	var id a2a.ArtifactID
	for i, n := range []string{"1", "2", "3"} {
		st := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: "counting " + n}))
		st.Metadata = map[string]any{"percent": float64(25 * (i + 1))}
		if err := q.Write(ctx, st); err != nil {
			return err
		}
		var art *a2a.TaskArtifactUpdateEvent
		if id == "" {
			art = a2a.NewArtifactEvent(rc, a2a.TextPart{Text: n})
			art.Artifact.Name = "count"
			id = art.Artifact.ID
		} else {
			art = a2a.NewArtifactUpdateEvent(rc, id, a2a.TextPart{Text: n})
		}
		art.LastChunk = i == 2
		if err := q.Write(ctx, art); err != nil {
			return err
		}
		if hold {
			a.started <- rc.TaskID
			<-ctx.Done()
			return nil
		}
	}
	return nil
}

func finish(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue, st a2a.TaskState, text string) error {
	var msg *a2a.Message
	if text != "" {
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: text})
	}
	ev := a2a.NewStatusUpdateEvent(rc, st, msg)
	ev.Final = true
	return q.Write(ctx, ev)
}

func (a *testAgent) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	select {
	case a.canceled <- rc.TaskID:
	default:
	}
	return finish(ctx, rc, q, a2a.TaskStateCanceled, "canceled by the client")
}
