package gateway_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/agentbus/agentbus/agents/sleep"
)

// headerTransport adds fixed headers (name, value pairs) to every request.
type headerTransport struct {
	base   http.RoundTripper
	header []string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for i := 0; i+1 < len(h.header); i += 2 {
		r.Header.Set(h.header[i], h.header[i+1])
	}
	return h.base.RoundTrip(r)
}

// a2aClient resolves the gateway's agent card and makes an a2a-go client
// from it, as any A2A client would. header holds name, value pairs sent
// with every request.
func (s *stack) a2aClient(t testing.TB, header ...string) (*a2aclient.Client, *a2a.AgentCard) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	httpc := &http.Client{Transport: headerTransport{base: s.client.Transport, header: header}}
	card, err := agentcard.NewResolver(httpc).Resolve(ctx, s.base)
	if err != nil {
		t.Fatalf("resolving the agent card: %v", err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(httpc))
	if err != nil {
		t.Fatalf("a2a client from the card: %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c, card
}

// startA2A is a stack with echo and sleep agents, and an A2A client.
func startA2A(t testing.TB) (*stack, *a2aclient.Client) {
	t.Helper()
	s := startStackWith(t, sleep.Agent{})
	c, _ := s.a2aClient(t)
	return s, c
}

func textMessage(text string) *a2a.MessageSendParams {
	return &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})}
}

func planMessage(p map[string]any) *a2a.MessageSendParams {
	return &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"plan": p}})}
}

// sleepPlan is one sleep step of ms milliseconds, then an echo.
func sleepPlan(ms int) map[string]any {
	return map[string]any{"steps": []map[string]any{
		{"id": "nap", "capability": "sleep", "input": map[string]any{"ms": ms}},
		{"id": "after", "capability": "echo", "depends_on": []string{"nap"}},
	}}
}

func nonBlocking(p *a2a.MessageSendParams) *a2a.MessageSendParams {
	no := false
	p.Config = &a2a.MessageSendConfig{Blocking: &no}
	return p
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// drain reads a stream to its end; each, if set, sees every event and may
// stop the reading early by returning false.
func drain(seq iter.Seq2[a2a.Event, error], each func(a2a.Event) bool) ([]a2a.Event, error) {
	var out []a2a.Event
	for ev, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
		if each != nil && !each(ev) {
			break
		}
	}
	return out, nil
}

func describe(evs []a2a.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		switch e := ev.(type) {
		case *a2a.Task:
			fmt.Fprintf(&b, "[task %s] ", e.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			fmt.Fprintf(&b, "[status %s final=%t %v] ", e.Status.State, e.Final, e.Metadata["offset"])
		case *a2a.TaskArtifactUpdateEvent:
			fmt.Fprintf(&b, "[artifact %s %v] ", e.Artifact.ID, e.Metadata["offset"])
		default:
			fmt.Fprintf(&b, "[%T] ", ev)
		}
	}
	return b.String()
}

func resultData(t testing.TB, art *a2a.Artifact) map[string]any {
	t.Helper()
	if art == nil || art.ID != "result" || len(art.Parts) != 1 {
		t.Fatalf("want one result artifact with one part, got %+v", art)
	}
	d, ok := art.Parts[0].(a2a.DataPart)
	if !ok {
		t.Fatalf("result part is %T, want a data part", art.Parts[0])
	}
	return d.Data
}
