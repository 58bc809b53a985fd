package mcpserver

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HandlerConfig configures Handler; its zero value means defaults.
type HandlerConfig struct {
	// Name and Version are the implementation the server announces.
	Name, Version string
	// Logger logs the SDK's activity; default slog.Default().
	Logger *slog.Logger
	// HTTPClient sends the calls back to the gateway; default a new
	// http.Client (no timeout: following lasts as long as a workflow).
	HTTPClient *http.Client
}

// Handler is the MCP server over streamable HTTP for a gateway to mount
// behind its own authentication (at /mcp). Each MCP session's server
// calls back to the gateway at the local address its first request
// arrived on — the gateway's own listener, never a host the request
// names — with each request's own credentials (HeaderClient), so a token
// acts through MCP exactly as it does on the REST API. Sessions hold no
// credentials: a request carrying another token acts as that token.
func Handler(cfg HandlerConfig) http.Handler {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	var mu sync.Mutex
	servers := map[string]*mcp.Server{} // by gateway base URL: one, in practice
	get := func(r *http.Request) *mcp.Server {
		base, err := localURL(r)
		if err != nil {
			return nil // the SDK answers 400
		}
		mu.Lock()
		defer mu.Unlock()
		if s, ok := servers[base]; ok {
			return s
		}
		s, err := New(Config{Client: HeaderClient(base, cfg.HTTPClient), Name: cfg.Name, Version: cfg.Version, Logger: cfg.Logger})
		if err != nil {
			return nil
		}
		servers[base] = s
		return s
	}
	return mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: cfg.Logger})
}

// localURL is the base URL of the listener r arrived on.
func localURL(r *http.Request) (string, error) {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return "", fmt.Errorf("mcpserver: request %s has no local address", r.URL.Path)
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := addr.String()
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	return scheme + "://" + host, nil
}
