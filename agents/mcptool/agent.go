package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/schemas"
)

// Agent serves the tools of one MCP server, each as a capability. It is
// safe for concurrent use.
type Agent struct {
	cfg    Config
	log    *slog.Logger
	client *mcp.Client
	// caps maps tool name → capability for the tools listed at start, the
	// capabilities the agent serves for its life; card is built then.
	caps map[string]string
	card agents.Card

	mu      sync.RWMutex
	session *mcp.ClientSession
	tools   map[string]*tool // capability → the tool as last listed
	down    error            // why there is no session now; nil with one

	progress progress

	relist    chan struct{}
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// tool is one listed tool with its compiled input schema (nil when it has
// none or it does not compile: the server checks then).
type tool struct {
	name        string
	description string
	rawSchema   json.RawMessage
	schema      *schemas.Schema
}

var (
	_ agents.Agent         = (*Agent)(nil)
	_ agents.HealthChecker = (*Agent)(nil)
)

// New connects to the server cfg names and lists its tools, then keeps
// the session in the background until Close. An unreachable server, or
// one that offers no tools, is an error.
func New(ctx context.Context, cfg Config) (*Agent, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: cfg.Logger.With("component", "mcptool", "mcp_server", cfg.Server.Name),
		relist: make(chan struct{}, 1), done: make(chan struct{})}
	a.client = mcp.NewClient(&mcp.Implementation{Name: "agentbus", Version: "1"}, &mcp.ClientOptions{
		Capabilities:                &mcp.ClientCapabilities{}, // no roots: agentbus has none to offer
		ToolListChangedHandler:      a.listChanged,
		ProgressNotificationHandler: a.progress.notify,
	})
	cs, listed, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(listed))
	for i, t := range listed {
		names[i] = t.Name
	}
	a.caps = Capabilities(cfg.Server.Name, names)
	if len(a.caps) == 0 {
		_ = cs.Close()
		return nil, fmt.Errorf("mcptool: server %s offers no tools", cfg.Server.Name)
	}
	for _, n := range names {
		if _, ok := a.caps[n]; !ok {
			a.log.Warn("tool left out: its capability name collides with another tool's", "tool", n)
		}
	}
	a.session, a.tools = cs, a.table(listed)
	a.card = a.newCard(cs, listed)
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel
	go a.supervise(bctx, cs)
	a.log.Info("mcp server connected", "capabilities", a.card.Capabilities)
	return a, nil
}

// Close ends the session (stopping a stdio server) and the supervisor;
// safe to call twice.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		a.cancel()
		<-a.done
	})
	return nil
}

// connect opens a session and lists every tool, within ConnectTimeout.
func (a *Agent) connect(ctx context.Context) (*mcp.ClientSession, []*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.ConnectTimeout)
	defer cancel()
	cs, err := a.client.Connect(ctx, a.transport(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcptool: connect to server %s: %w", a.cfg.Server.Name, err)
	}
	listed, err := listTools(ctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, nil, fmt.Errorf("mcptool: server %s: %w", a.cfg.Server.Name, err)
	}
	return cs, listed, nil
}

// transport is a new transport to the server: a stdio server's command
// runs again on each connect.
func (a *Agent) transport() mcp.Transport {
	s := a.cfg.Server
	if s.URL != "" {
		hc := &http.Client{Transport: headers{h: s.Headers, next: http.DefaultTransport}}
		return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}
	}
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Stderr = a.cfg.Stderr
	return &mcp.CommandTransport{Command: cmd}
}

// headers adds fixed headers to every request.
type headers struct {
	h    http.Header
	next http.RoundTripper
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.h {
			r.Header[k] = slices.Clone(v)
		}
	}
	return t.next.RoundTrip(r)
}

// listTools lists every tool, page after page.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// table maps the capabilities served to the listed tools that back them.
func (a *Agent) table(listed []*mcp.Tool) map[string]*tool {
	out := make(map[string]*tool, len(listed))
	for _, t := range listed {
		c, ok := a.caps[t.Name]
		if !ok {
			continue
		}
		tl := &tool{name: t.Name, description: t.Description}
		if t.InputSchema != nil {
			raw, err := json.Marshal(t.InputSchema)
			if err == nil {
				tl.rawSchema = raw
				if tl.schema, err = schemas.Compile("input of "+c, raw); err != nil {
					a.log.Warn("tool input schema does not compile: inputs go to the server unchecked", "tool", t.Name, "err", err)
				}
			}
		}
		out[c] = tl
	}
	return out
}

// semver is the version grammar of a card (a NATS micro service's).
var semver = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// newCard describes the server and its tools, for the registry and for
// semantic discovery.
func (a *Agent) newCard(cs *mcp.ClientSession, listed []*mcp.Tool) agents.Card {
	version, title := "0.0.0", a.cfg.Server.Name
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		title = ir.ServerInfo.Name
		if ir.ServerInfo.Title != "" {
			title = ir.ServerInfo.Title
		}
		if v := ir.ServerInfo.Version; semver.MatchString(v) {
			version = v
		} else if v != "" {
			title += " " + v // a card's version is semver (NATS micro)
		}
	}
	var caps, lines []string
	for _, t := range listed {
		c, ok := a.caps[t.Name]
		if !ok {
			continue
		}
		caps = append(caps, c)
		line := t.Name
		if t.Description != "" {
			line += ": " + t.Description
		}
		lines = append(lines, line)
	}
	slices.Sort(caps)
	return agents.Card{Name: "mcp-" + a.cfg.Server.Name, Version: version, Capabilities: caps,
		Description: fmt.Sprintf("Tools of the MCP server %s (%s). %s", a.cfg.Server.Name, title, strings.Join(lines, "; "))}
}

// Card describes the agent: its capabilities are those of the tools
// listed at start; input schemas are the tools' as last listed.
func (a *Agent) Card() agents.Card {
	c := a.card
	c.Capabilities = slices.Clone(c.Capabilities)
	a.mu.RLock()
	defer a.mu.RUnlock()
	for cap, t := range a.tools {
		if len(t.rawSchema) > 0 {
			if c.InputSchemas == nil {
				c.InputSchemas = map[string]json.RawMessage{}
			}
			c.InputSchemas[cap] = t.rawSchema
		}
	}
	return c
}

// Health fails while the session is down (the server exited or cannot
// be reached, and is being restarted).
func (a *Agent) Health(context.Context) error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.down != nil {
		return fmt.Errorf("mcp server %s is not connected, reconnecting: %w", a.cfg.Server.Name, a.down)
	}
	return nil
}

// listChanged is the client's notifications/tools/list_changed handler:
// it asks the supervisor to list again (never blocking the SDK).
func (a *Agent) listChanged(context.Context, *mcp.ToolListChangedRequest) {
	select {
	case a.relist <- struct{}{}:
	default:
	}
}
