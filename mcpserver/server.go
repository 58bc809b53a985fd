package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/client"
)

// ErrConfig: the Config is not usable.
var ErrConfig = errors.New("mcpserver: invalid config")

// ClientFunc returns the gateway client that serves one MCP request.
// extra is the request's transport information: the HTTP request's
// headers over streamable HTTP, nil over stdio. It must be safe for
// concurrent use.
type ClientFunc func(ctx context.Context, extra *mcp.RequestExtra) (*client.Client, error)

// Config configures a server. Client is required; the zero value of every
// other field means its default.
type Config struct {
	// Client picks the gateway client of each request: Static or
	// HeaderClient.
	Client ClientFunc
	// Name and Version are the implementation the server announces;
	// default "agentbus" and "dev".
	Name, Version string
	// Logger logs the SDK's server activity; default slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	c.Name = cmp.Or(c.Name, "agentbus")
	c.Version = cmp.Or(c.Version, "dev")
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	if c.Client == nil {
		return fmt.Errorf("%w: Client is required", ErrConfig)
	}
	return nil
}

// server is the state the tool and resource handlers share: only how to
// reach the gateway.
type server struct {
	client ClientFunc
}

// New builds the MCP server: its tools (tools.go) and resources
// (resources.go). The *mcp.Server may be connected to any number of
// transports at once.
func New(cfg Config) (*mcp.Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Title: "agentbus", Version: cfg.Version}, &mcp.ServerOptions{
		Logger: cfg.Logger,
		Instructions: "agentbus runs multi-agent workflows. Submit a query (planned by agentbus) or a plan of steps, each naming a capability; " +
			"follow it to its end (or submit with wait) to get its result, with a progress notification per event; approve or reject a step " +
			"that awaits a decision; cancel a running workflow; search the tenant's documents. Read agentbus://workflows/{id} for a " +
			"workflow's state and agentbus://workflows/{id}/answer for its result.",
	})
	s := &server{client: cfg.Client}
	s.addTools(srv)
	s.addResources(srv)
	return srv, nil
}

// Static serves every request with c: `agentbus mcp` over stdio, where
// the command's flags say which gateway, tenant and token.
func Static(c *client.Client) ClientFunc {
	return func(context.Context, *mcp.RequestExtra) (*client.Client, error) { return c, nil }
}

// HeaderClient serves each request with a client of the gateway at base
// that carries the request's own credentials: its bearer token, and its
// X-Agentbus-Tenant and X-Agentbus-User headers (which the gateway heeds
// only for admin tokens, or with auth off). The gateway thus decides the
// tenant and the role of every call as it does for its REST API; nothing
// here grants anything. hc sends the requests (nil: a new http.Client).
func HeaderClient(base string, hc *http.Client) ClientFunc {
	if hc == nil {
		hc = &http.Client{}
	}
	return func(_ context.Context, extra *mcp.RequestExtra) (*client.Client, error) {
		cfg := client.Config{URL: base, HTTPClient: hc}
		if extra != nil && extra.Header != nil {
			h := extra.Header
			if scheme, token, ok := strings.Cut(h.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
				cfg.Token = strings.TrimSpace(token)
			}
			cfg.Tenant = h.Get(api.TenantHeader)
			cfg.User = h.Get(api.UserHeader)
		}
		c, err := client.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: %w", err)
		}
		return c, nil
	}
}

// gateway returns the client of a request, or an error that says why
// there is none.
func (s *server) gateway(ctx context.Context, extra *mcp.RequestExtra) (*client.Client, error) {
	c, err := s.client(ctx, extra)
	if err != nil {
		return nil, fmt.Errorf("no agentbus gateway to act through: %w", err)
	}
	return c, nil
}
