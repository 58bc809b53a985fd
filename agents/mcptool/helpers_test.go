package mcptool_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/agents/mcptool"
	"github.com/agentbus/agentbus/bus/bustest"
)

// deadline bounds every wait of these tests.
const deadline = 30 * time.Second

// serverArg, as the first argument, makes the test binary an MCP server
// over stdio (TestMain) instead of running tests.
const serverArg = "mcptool-test-stdio-server"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serverArg {
		srv := newToolServer(&toolHooks{})
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "test stdio server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// AddIn and AddOut are the add tool's input and output.
type AddIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

// AddOut is the add tool's structured result.
type AddOut struct {
	Sum int `json:"sum"`
}

// toolHooks lets a test see what the in-process server's tools did.
type toolHooks struct {
	adds, fails atomic.Int64
	// slowStarted gets a value when the slow tool starts; slowCancelled
	// is closed when its context ends.
	slowStarted   chan struct{}
	slowCancelled chan struct{}
}

// newToolServer is the MCP server of these tests, with a page size of 2
// so that listing its tools takes several pages:
//   - add {a:int, b:int} → {sum}
//   - fail → isError
//   - slow → reports progress, then waits for its context to end
//   - greet → a text and an image content, no structured content
//   - pid → the server's process id (a restarted stdio server has a new one)
//   - crash → the server process exits (stdio only)
func newToolServer(h *toolHooks) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test-tools", Version: "1.2.3"}, &mcp.ServerOptions{PageSize: 2})
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "adds two integers"},
		func(_ context.Context, _ *mcp.CallToolRequest, in AddIn) (*mcp.CallToolResult, AddOut, error) {
			h.adds.Add(1)
			return nil, AddOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "always fails"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			h.fails.Add(1)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the disk is on fire"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "runs until cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 4, Message: "a quarter"})
			}
			if h.slowStarted != nil {
				h.slowStarted <- struct{}{}
			}
			<-ctx.Done()
			if h.slowCancelled != nil {
				close(h.slowCancelled)
			}
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "greets with a text and a picture"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "hello"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "pid", Description: "the server's process id"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, map[string]int, error) {
			return nil, map[string]int{"pid": os.Getpid()}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "the server exits"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	return srv
}

// httpServer serves srv over streamable HTTP on a random port and
// returns its URL.
func httpServer(t *testing.T, srv *mcp.Server) string {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// stdioCommand is the command that runs this test binary as a stdio
// MCP server (TestMain).
func stdioCommand(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, serverArg}
}

// newAgent connects an Agent to server, closed when the test ends.
func newAgent(t *testing.T, server mcptool.Server, tweak ...func(*mcptool.Config)) *mcptool.Agent {
	t.Helper()
	cfg := mcptool.Config{Server: server, Logger: bustest.Logger(t)}
	for _, f := range tweak {
		f(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	a, err := mcptool.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// eventually waits, up to deadline, for cond to hold, checking every few
// milliseconds; what names what is waited for.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	end := time.After(deadline)
	for !cond() {
		select {
		case <-tick.C:
		case <-end:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
