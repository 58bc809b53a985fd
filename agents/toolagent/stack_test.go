package toolagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/toolagent"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/stacktest"
	"github.com/agentbus/agentbus/llm"
)

// deadline bounds every wait; nothing sleeps.
const deadline = 30 * time.Second

// tool is an agent serving one capability with an input schema, as an MCP
// tool is served.
type tool struct {
	name  string
	calls atomic.Int64
	fn    func(ctx context.Context, in json.RawMessage) (json.RawMessage, error)
}

func (a *tool) Card() agents.Card {
	return agents.Card{Name: a.name, Version: "1.0.0", Capabilities: []string{a.name}, Description: "test tool " + a.name,
		InputSchemas: map[string]json.RawMessage{a.name: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}
}

func (a *tool) Handle(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	a.calls.Add(1)
	return a.fn(ctx, req.Input)
}

// script is a chat-completions server whose answer to the n-th request
// (from 0) is script(n, the request's tool results so far).
type script struct {
	requests atomic.Int64
	answer   func(n int, results []string) string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &req)
	var results []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	n := int(s.requests.Add(1) - 1)
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"scripted","choices":[{"index":0,%s}],
		"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, n, s.answer(n, results))
}

// calls is a choice that calls tools: name and arguments, in pairs.
func calls(n int, nameArgs ...string) string {
	var tc []string
	for i := 0; i < len(nameArgs); i += 2 {
		args, _ := json.Marshal(nameArgs[i+1])
		tc = append(tc, fmt.Sprintf(`{"id":"call_%d_%d","type":"function","function":{"name":%q,"arguments":%s}}`, n, i/2, nameArgs[i], args))
	}
	return `"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[` + strings.Join(tc, ",") + `]}`
}

func final(text string) string {
	b, _ := json.Marshal(text)
	return `"finish_reason":"stop","message":{"role":"assistant","content":` + string(b) + `}`
}

// world is a running agentbus with the tools and a tool-calling agent
// whose model is a script.
type world struct {
	env *bustest.Env
	c   *client.Client
	sc  *script
}

func start(t *testing.T, cfg toolagent.Config, sc *script, tools ...*tool) *world {
	t.Helper()
	srv := httptest.NewServer(sc)
	t.Cleanup(srv.Close)
	chat, err := llm.NewChat(llm.ChatConfig{URL: srv.URL + "/v1", Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	env := bustest.New(t)
	reg, err := discovery.New(t.Context(), env.Bus, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	cfg.Bus, cfg.Model, cfg.Tools, cfg.Logger = env.Bus, chat, reg, bustest.Logger(t)
	ag, err := toolagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list := []agents.Agent{ag}
	for _, tl := range tools {
		list = append(list, tl)
	}
	stacktest.StartOn(t, env, stacktest.Options{Agents: list})
	c, err := client.NewNATS(env.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// The tools are offered once they are registered.
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	for _, tl := range tools {
		for {
			if ok, _ := reg.Serves(ctx, tl.name); ok {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never registered", tl.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return &world{env: env, c: c, sc: sc}
}

func agentPlan(input string) *events.Plan {
	return &events.Plan{Steps: []events.PlanStep{{ID: "ask", Capability: toolagent.Capability, Input: json.RawMessage(input)}}}
}

// events of a workflow so far (it has ended).
func (w *world) events(t *testing.T, wf string) []events.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	var out []events.Envelope
	err := w.env.Bus.Follow(ctx, "default", wf, 0, func(_ context.Context, r bus.Record) error {
		out = append(out, r.Envelope)
		if r.Envelope.Type.Terminal() {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("following %s: %v", wf, err)
	}
	return out
}

// TestTwoToolsThenAnswer: a scripted model calls two tools, one after the
// other, then answers citing both; each call ran as a child workflow of
// its own, with its events and the parent's metadata, and the agent's
// step reported each call as progress.
func TestTwoToolsThenAnswer(t *testing.T) {
	lookup := &tool{name: "lookup", fn: func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"weather":"rain in Paris"}`), nil
	}}
	shout := &tool{name: "shout", fn: func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		var v struct{ Q string }
		_ = json.Unmarshal(in, &v)
		return json.Marshal(strings.ToUpper(v.Q))
	}}
	sc := &script{answer: func(n int, results []string) string {
		switch n {
		case 0:
			return calls(n, "lookup", `{"q":"paris"}`)
		case 1:
			return calls(n, "shout", `{"q":"take an umbrella"}`)
		}
		return final(fmt.Sprintf("It rains in Paris [1]: %s [2]. (saw %d results)", "TAKE AN UMBRELLA", len(results)))
	}}
	w := start(t, toolagent.Config{}, sc, lookup, shout)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	sub, err := w.c.Submit(ctx, client.Submission{Query: "should I take an umbrella in Paris?", Plan: agentPlan(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.c.Wait(ctx, sub.WorkflowID)
	if err != nil {
		t.Fatalf("the agent's workflow: %v", err)
	}
	var out toolagent.Output
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Answer, "[1]") || !strings.Contains(out.Answer, "saw 2 results") || out.Iterations != 3 || len(out.Calls) != 2 ||
		len(out.Citations) != 2 || out.Citations[0].Tool != "lookup" || out.Citations[1].Tool != "shout" || out.SourcesUsed != 2 || out.Tokens != 45 {
		t.Fatalf("output %+v", out)
	}
	if lookup.calls.Load() != 1 || shout.calls.Load() != 1 {
		t.Fatalf("lookup ran %d times, shout %d", lookup.calls.Load(), shout.calls.Load())
	}
	for i, c := range out.Calls {
		if c.Status != events.StateCompleted || c.WorkflowID == "" {
			t.Fatalf("call %d: %+v", i, c)
		}
		cp, err := w.c.State(ctx, c.WorkflowID)
		if err != nil {
			t.Fatalf("the child workflow %s: %v", c.WorkflowID, err)
		}
		if cp.Status != events.StateCompleted || cp.Metadata[toolagent.MetadataParentWorkflow] != sub.WorkflowID ||
			cp.Metadata[toolagent.MetadataParentStep] != "ask" || cp.Plan.Steps[0].Capability != c.Tool {
			t.Fatalf("child %s: %s %v %+v", c.WorkflowID, cp.Status, cp.Metadata, cp.Plan)
		}
		evs := w.events(t, c.WorkflowID)
		if last := evs[len(evs)-1]; last.Type != events.TypeComplete {
			t.Fatalf("child %s ended %s", c.WorkflowID, last.Type)
		}
	}
	progress := 0
	for _, e := range w.events(t, sub.WorkflowID) {
		var p events.Progress
		if e.Type == events.TypeProgress && e.StepID == "ask" && e.Unmarshal(&p) == nil && strings.Contains(p.Message, "tool call [") {
			progress++
		}
	}
	if progress < 4 { // running and completed, for each call
		t.Fatalf("%d progress events of tool calls on the agent's step, want 4", progress)
	}
}

// TestCancelMidLoop: canceling the workflow while a tool call runs stops
// the loop: the child workflow is canceled, its tool's context ends, and
// the model is not asked again.
func TestCancelMidLoop(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan struct{})
	var once sync.Once
	slow := &tool{name: "slow", fn: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		once.Do(func() { close(started) })
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	}}
	sc := &script{answer: func(n int, _ []string) string { return calls(n, "slow", `{}`) }}
	w := start(t, toolagent.Config{}, sc, slow)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	sub, err := w.c.Submit(ctx, client.Submission{Query: "wait", Plan: agentPlan(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the tool never started")
	}
	if res, err := w.c.Cancel(ctx, sub.WorkflowID, "enough"); err != nil || !res.Applied {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("the tool call's context never ended")
	}
	_, err = w.c.Wait(ctx, sub.WorkflowID)
	if we := (*client.WorkflowError)(nil); !errors.As(err, &we) || we.Code != "canceled" {
		t.Fatalf("the agent's workflow: %v, want canceled", err)
	}
	// The child workflow ends canceled.
	var child string
	for _, e := range w.events(t, sub.WorkflowID) {
		var p events.Progress
		if e.Type == events.TypeProgress && e.Unmarshal(&p) == nil && strings.Contains(p.Message, "running as workflow ") {
			child = p.Message[strings.LastIndex(p.Message, " ")+1:]
		}
	}
	if child == "" {
		t.Fatal("no progress event named the child workflow")
	}
	if evs := w.events(t, child); evs[len(evs)-1].Type != events.TypeCancelled {
		t.Fatalf("the child workflow %s ended %s", child, evs[len(evs)-1].Type)
	}
	if n := sc.requests.Load(); n != 1 {
		t.Fatalf("the model was asked %d times, want once", n)
	}
}

// TestIterationBound: a model that never stops calling tools is asked
// MaxIterations times, then the step fails naming the bound.
func TestIterationBound(t *testing.T) {
	lookup := &tool{name: "lookup", fn: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`"again"`), nil
	}}
	sc := &script{answer: func(n int, _ []string) string { return calls(n, "lookup", fmt.Sprintf(`{"q":"%d"}`, n)) }}
	w := start(t, toolagent.Config{MaxIterations: 3}, sc, lookup)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	sub, err := w.c.Submit(ctx, client.Submission{Query: "loop", Plan: agentPlan(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.c.Wait(ctx, sub.WorkflowID)
	var we *client.WorkflowError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "iteration bound") {
		t.Fatalf("the agent's workflow: %v, want a failure naming the iteration bound", err)
	}
	if n := sc.requests.Load(); n != 3 {
		t.Fatalf("the model was asked %d times, want 3", n)
	}
	if n := lookup.calls.Load(); n != 3 {
		t.Fatalf("the tool ran %d times, want 3", n)
	}
}
