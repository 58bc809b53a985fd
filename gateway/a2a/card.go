package a2a

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentbus/agentbus/discovery"
)

// protocolVersion is the version of the A2A protocol the gateway speaks.
const protocolVersion = "0.3.0"

// Config configures the A2A surface: the agent card at
// /.well-known/agent-card.json, JSON-RPC at /a2a, and the legacy
// POST /tasks/send. The zero value means defaults.
type Config struct {
	// Name and Description head the agent card; defaults "agentbus" and a
	// sentence saying what it does.
	Name        string
	Description string
	// Version is the agent's version on the card; default the binary's
	// module version, "dev" in a development build.
	Version string
	// PublicURL is the gateway's base URL as clients reach it (scheme and
	// host, maybe a path prefix), e.g. https://agents.example.com. Empty
	// means the request's own scheme and Host, which is right unless a
	// proxy rewrites them.
	PublicURL string
	// BlockTimeout bounds how long a blocking message/send (and a
	// non-streaming POST /tasks/send) waits for the task to finish or to
	// need input before it answers with the task as it is; default 60s.
	BlockTimeout time.Duration
}

// SetDefaults replaces every zero field by its default.
func (c *Config) SetDefaults() {
	if c.Name == "" {
		c.Name = "agentbus"
	}
	if c.Description == "" {
		c.Description = "Multi-agent pipeline on NATS JetStream: plans a query into a DAG of agent steps " +
			"(search, summarise, compose, …), runs them durably and streams progress. " +
			"Send text as the query, or a data part {\"plan\": {\"steps\": […]}} with an explicit plan."
	}
	if c.Version == "" {
		c.Version = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			c.Version = bi.Main.Version
		}
	}
	if c.BlockTimeout == 0 {
		c.BlockTimeout = 60 * time.Second
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, fmt.Errorf("gateway: a2a public URL %q: want http(s)://HOST[/PREFIX]", c.PublicURL))
		}
	}
	if c.BlockTimeout < 0 {
		errs = append(errs, fmt.Errorf("gateway: a2a block timeout %s is negative", c.BlockTimeout))
	}
	return errors.Join(errs...)
}

// publicBase is the base URL clients reach the gateway at, without a
// trailing slash.
func (g *Server) publicBase(r *http.Request) string {
	if g.cfg.PublicURL != "" {
		return strings.TrimRight(g.cfg.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// agentCard answers GET /.well-known/agent-card.json: agentbus as one A2A
// agent whose skills are the capabilities registered right now. The card
// is public, as A2A discovery wants, and names no tenant.
func (g *Server) agentCard(w http.ResponseWriter, r *http.Request) {
	list, err := g.registry.List(r.Context())
	if err != nil {
		g.gw.WriteError(w, http.StatusServiceUnavailable, "unavailable", err.Error(), nil)
		return
	}
	endpoint := g.publicBase(r) + "/a2a"
	card := a2a.AgentCard{
		Name:               g.cfg.Name,
		Description:        g.cfg.Description,
		Version:            g.cfg.Version,
		ProtocolVersion:    protocolVersion,
		URL:                endpoint,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		AdditionalInterfaces: []a2a.AgentInterface{
			{Transport: a2a.TransportProtocolJSONRPC, URL: endpoint},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"application/json", "text/plain"},
		Skills:             skills(list),
	}
	if g.authOn {
		// Say how to authenticate: the card itself is public.
		card.SecuritySchemes = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{
			Scheme: "Bearer", Description: "an agentbus token; it names the tenant"}}
		card.Security = []a2a.SecurityRequirements{{"bearer": a2a.SecuritySchemeScopes{}}}
	}
	w.Header().Set("Cache-Control", "no-cache")
	g.gw.WriteJSON(w, http.StatusOK, card)
}

// skills turns registered agent instances into one skill per capability,
// described by the agents that offer it, with their example queries.
// Unreachable instances are left out: nothing would run their steps.
func skills(list []discovery.Instance) []a2a.AgentSkill {
	byCap := map[string]*a2a.AgentSkill{}
	var caps []string
	for _, in := range list {
		if in.Health == discovery.Unreachable {
			continue
		}
		for _, c := range in.Capabilities {
			s, ok := byCap[c]
			if !ok {
				s = &a2a.AgentSkill{ID: c, Name: c, Description: in.Description, Tags: []string{c}}
				byCap[c] = s
				caps = append(caps, c)
			}
			if !slices.Contains(s.Tags, in.Name) {
				s.Tags = append(s.Tags, in.Name)
				if s.Description != in.Description && in.Description != "" && !strings.Contains(s.Description, in.Description) {
					s.Description += " " + in.Description
				}
			}
			for _, e := range in.Examples {
				if !slices.Contains(s.Examples, e) {
					s.Examples = append(s.Examples, e)
				}
			}
		}
	}
	slices.Sort(caps)
	out := make([]a2a.AgentSkill, 0, len(caps))
	for _, c := range caps {
		out = append(out, *byCap[c])
	}
	return out
}
