package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/mcptool"
)

// recorder is an agents.Emitter that keeps the artifacts and progress.
type recorder struct {
	mu        sync.Mutex
	artifacts []string // "id name data"
	progress  []string // "percent message"
}

func (r *recorder) Progress(_ context.Context, pct float64, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, fmt.Sprintf("%g %s", pct, msg))
	return nil
}

func (r *recorder) progressed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.progress)
}

func (r *recorder) Artifact(_ context.Context, id, name string, data any, _, _ bool) error {
	b, _ := json.Marshal(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.artifacts = append(r.artifacts, id+" "+name+" "+string(b))
	return nil
}

func call(t *testing.T, a *mcptool.Agent, capability, input string) (json.RawMessage, *recorder, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	rec := &recorder{}
	out, err := a.Handle(ctx, agents.Request{StepID: "s", Capability: capability, Input: json.RawMessage(input)}, rec)
	return out, rec, err
}

// Every tool is listed, over pages, and served under a valid capability
// with its input schema in the card.
func TestCardListsEveryToolWithSchemas(t *testing.T) {
	a := newAgent(t, mcptool.Server{Name: "web", URL: httpServer(t, newToolServer(&toolHooks{}))})
	c := a.Card()
	want := []string{"tool_web_add", "tool_web_crash", "tool_web_fail", "tool_web_greet", "tool_web_pid", "tool_web_slow"}
	if c.Name != "mcp-web" || c.Version != "1.2.3" || strings.Join(c.Capabilities, ",") != strings.Join(want, ",") {
		t.Fatalf("card %s %s %v, want mcp-web 1.2.3 %v", c.Name, c.Version, c.Capabilities, want)
	}
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(c.InputSchemas["tool_web_add"], &schema); err != nil || strings.Join(schema.Required, ",") != "a,b" {
		t.Fatalf("add's input schema %s (%v), want one requiring a and b", c.InputSchemas["tool_web_add"], err)
	}
	if !strings.Contains(c.Description, "add: adds two integers") {
		t.Errorf("description %q does not describe the tools", c.Description)
	}
}

func TestHandle(t *testing.T) {
	h := &toolHooks{}
	a := newAgent(t, mcptool.Server{Name: "web", URL: httpServer(t, newToolServer(h))})

	t.Run("structured result is the output", func(t *testing.T) {
		out, rec, err := call(t, a, "tool_web_add", `{"a":2,"b":3}`)
		if err != nil || string(out) != `{"sum":5}` {
			t.Fatalf("add: %s, %v; want {\"sum\":5}", out, err)
		}
		if len(rec.artifacts) != 1 || !strings.HasPrefix(rec.artifacts[0], "content-0 text ") {
			t.Errorf("artifacts %q, want the text content", rec.artifacts)
		}
	})
	t.Run("content list is the output without structured content", func(t *testing.T) {
		out, rec, err := call(t, a, "tool_web_greet", ``)
		if err != nil {
			t.Fatal(err)
		}
		var items []map[string]any
		if err := json.Unmarshal(out, &items); err != nil || len(items) != 2 || items[0]["text"] != "hello" || items[1]["type"] != "image" {
			t.Fatalf("greet output %s (%v), want the text and the image", out, err)
		}
		if len(rec.artifacts) != 2 || !strings.HasPrefix(rec.artifacts[1], "content-1 image image/png ") {
			t.Errorf("artifacts %q, want one per content item", rec.artifacts)
		}
	})
	t.Run("bad input names the pointer and is permanent", func(t *testing.T) {
		before := h.adds.Load()
		_, _, err := call(t, a, "tool_web_add", `{"a":"two"}`)
		if !errors.Is(err, agents.ErrPermanent) || !strings.Contains(err.Error(), "/a:") || !strings.Contains(err.Error(), "/b:") {
			t.Fatalf("add with a bad input: %v, want a permanent error naming /a and /b", err)
		}
		if _, _, err := call(t, a, "tool_web_add", `[1,2]`); !errors.Is(err, agents.ErrPermanent) {
			t.Fatalf("add with an array: %v, want a permanent error", err)
		}
		if h.adds.Load() != before {
			t.Error("the tool was called with an input its schema refuses")
		}
	})
	t.Run("isError fails the step for good", func(t *testing.T) {
		_, _, err := call(t, a, "tool_web_fail", `{}`)
		if !errors.Is(err, mcptool.ErrToolFailed) || !errors.Is(err, agents.ErrPermanent) || !strings.Contains(err.Error(), "the disk is on fire") {
			t.Fatalf("fail: %v, want a permanent ErrToolFailed with the tool's text", err)
		}
	})
	t.Run("unknown capability", func(t *testing.T) {
		if _, _, err := call(t, a, "tool_web_nope", `{}`); !errors.Is(err, agents.ErrPermanent) {
			t.Fatalf("unknown capability: %v, want permanent", err)
		}
	})
}

// Cancelling the step's context cancels the call on the server; the
// tool's progress notifications are the step's progress.
func TestCancelReachesTheTool(t *testing.T) {
	h := &toolHooks{slowStarted: make(chan struct{}, 1), slowCancelled: make(chan struct{})}
	a := newAgent(t, mcptool.Server{Name: "web", URL: httpServer(t, newToolServer(h))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	rec := &recorder{}
	go func() {
		_, err := a.Handle(ctx, agents.Request{StepID: "s", Capability: "tool_web_slow"}, rec)
		done <- err
	}()
	waitChan(t, "the slow tool to start", h.slowStarted)
	eventually(t, "the tool's progress", func() bool { return slices.Contains(rec.progressed(), "25 a quarter") })
	cancel()
	waitChan(t, "the slow tool's context to end", h.slowCancelled)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
}

// A tool list change reaches the card and the handler.
func TestToolListChanged(t *testing.T) {
	srv := newToolServer(&toolHooks{})
	a := newAgent(t, mcptool.Server{Name: "web", URL: httpServer(t, srv)})
	srv.RemoveTools("add")
	eventually(t, "add's schema to leave the card", func() bool { _, ok := a.Card().InputSchemas["tool_web_add"]; return !ok })
	if _, _, err := call(t, a, "tool_web_add", `{"a":1,"b":2}`); !errors.Is(err, agents.ErrPermanent) || !strings.Contains(err.Error(), "no longer offers") {
		t.Fatalf("add after it was removed: %v, want a permanent 'no longer offers'", err)
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "adds, again"},
		func(_ context.Context, _ *mcp.CallToolRequest, in AddIn) (*mcp.CallToolResult, AddOut, error) {
			return nil, AddOut{Sum: 100 * (in.A + in.B)}, nil
		})
	eventually(t, "add to come back", func() bool { _, ok := a.Card().InputSchemas["tool_web_add"]; return ok })
	if out, _, err := call(t, a, "tool_web_add", `{"a":1,"b":2}`); err != nil || string(out) != `{"sum":300}` {
		t.Fatalf("add after it came back: %s, %v", out, err)
	}
}

// A stdio server that exits is restarted, the agent unhealthy meanwhile.
func TestStdioServerRestarts(t *testing.T) {
	a := newAgent(t, mcptool.Server{Name: "files", Command: stdioCommand(t)}, func(c *mcptool.Config) {
		c.RestartMin = 200 * time.Millisecond
	})
	pid := func() int {
		t.Helper()
		out, _, err := call(t, a, "tool_files_pid", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ PID int }
		if err := json.Unmarshal(out, &v); err != nil || v.PID == 0 {
			t.Fatalf("pid output %s: %v", out, err)
		}
		return v.PID
	}
	first := pid()
	if _, _, err := call(t, a, "tool_files_crash", `{}`); err == nil || errors.Is(err, agents.ErrPermanent) {
		t.Fatalf("crash: %v, want an error worth a retry", err)
	}
	eventually(t, "the agent to report itself unhealthy", func() bool { return a.Health(context.Background()) != nil })
	if _, _, err := call(t, a, "tool_files_add", `{"a":1,"b":1}`); !errors.Is(err, mcptool.ErrUnavailable) && err != nil {
		t.Fatalf("a call while restarting: %v, want ErrUnavailable (or success once restarted)", err)
	}
	eventually(t, "the agent to be healthy again", func() bool { return a.Health(context.Background()) == nil })
	if second := pid(); second == first {
		t.Fatalf("the server's pid is %d before and after the crash: not restarted", first)
	}
}

func waitChan[T any](t *testing.T, what string, c <-chan T) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(deadline):
		t.Fatalf("timed out waiting for %s", what)
	}
}
