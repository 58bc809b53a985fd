package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progress gathers the progress notifications a client receives.
type progress struct {
	mu   sync.Mutex
	msgs []string
	// more is closed and replaced at each notification.
	more chan struct{}
}

func (p *progress) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, req.Params.Message)
	close(p.more)
	p.more = make(chan struct{})
}

// waitFor waits until a notification's message has prefix, within a
// deadline: the SDK's client hands notifications to the handler
// asynchronously, so the end's may come just after the tool's result.
func (p *progress) waitFor(t *testing.T, prefix string) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		msgs, more := append([]string(nil), p.msgs...), p.more
		p.mu.Unlock()
		for _, m := range msgs {
			if strings.HasPrefix(m, prefix) {
				return msgs
			}
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no progress notification %q among %q", prefix, msgs)
		}
	}
}

// connect connects an MCP client, as an assistant would, over t.
func connect(t *testing.T, tr mcp.Transport) (*mcp.ClientSession, *progress) {
	t.Helper()
	p := &progress{more: make(chan struct{})}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-assistant", Version: "1.0.0"}, &mcp.ClientOptions{ProgressNotificationHandler: p.handle})
	cs, err := c.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, p
}

// call calls a tool with a progress token and decodes its structured
// result into out; a tool error fails the test.
func call(t *testing.T, cs *mcp.ClientSession, name string, args, out any) {
	t.Helper()
	res := callRaw(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
}

func callRaw(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	params.SetProgressToken(name + "-progress")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// text is a tool result's text content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// read reads a resource's text.
func read(t *testing.T, cs *mcp.ClientSession, uri string) (string, error) {
	t.Helper()
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	if len(res.Contents) != 1 {
		t.Fatalf("%s: %d contents, want 1", uri, len(res.Contents))
	}
	return res.Contents[0].Text, nil
}

// waitPhase reads a workflow's state resource until its phase is want,
// within a deadline.
func waitPhase(t *testing.T, cs *mcp.ClientSession, id, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		body, err := read(t, cs, "agentbus://workflows/"+id)
		if err == nil {
			var st struct {
				Phase string `json:"phase"`
			}
			_ = json.Unmarshal([]byte(body), &st)
			if st.Phase == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %s never reached phase %s: %v %s", id, want, err, body)
		}
		time.Sleep(50 * time.Millisecond) // polling a state resource: there is no event to wait on here
	}
}
