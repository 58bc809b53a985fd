package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/a2aagent"
)

// a2aFlags serve the skills of remote A2A agents as capabilities
// (agents/a2aagent), beside the built-in agents.
type a2aFlags struct {
	endpoints []a2aagent.Endpoint
	file      string
	refresh   time.Duration
}

func (f *a2aFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Var(endpointsValue{&f.endpoints}, "a2a-agent", "serve each skill of the remote A2A agent at URL as a capability (repeatable): "+
		"URL[;prefix=PREFIX][;header=NAME:env:VARIABLE]..., the header's value read from the environment variable")
	fl.StringVar(&f.file, "a2a-agents", "", `JSON file of remote A2A agents to serve: [{"url": …, "prefix": …, "headers_env": {"Authorization": "VARIABLE"}}]`)
	fl.DurationVar(&f.refresh, "a2a-refresh", 30*time.Second, "how often a remote A2A agent's card is fetched again; while it does not answer, its skills read unhealthy")
}

// endpointsValue is --a2a-agent: each use adds an endpoint, checked at
// parse time.
type endpointsValue struct{ list *[]a2aagent.Endpoint }

func (v endpointsValue) Type() string { return "endpoint" }

func (v endpointsValue) String() string {
	var s []string
	for _, e := range *v.list {
		s = append(s, e.String())
	}
	return strings.Join(s, ", ")
}

func (v endpointsValue) Set(s string) error {
	e, err := a2aagent.ParseEndpoint(s)
	if err != nil {
		return err
	}
	*v.list = append(*v.list, e)
	return nil
}

// agents connects every remote agent named and returns an agent per
// skill; served are the agents the worker runs already, whose capabilities
// a skill may not take. close releases the connections.
func (f *a2aFlags) agents(ctx context.Context, log *slog.Logger, served []agents.Agent) (list []agents.Agent, close func(), err error) {
	var remotes []*a2aagent.Remote
	close = func() {
		for _, r := range remotes {
			r.Close()
		}
	}
	endpoints := f.endpoints
	if f.file != "" {
		more, err := a2aagent.LoadEndpoints(f.file)
		if err != nil {
			return nil, close, &exitError{code: exitUsage, msg: "--a2a-agents: " + err.Error()}
		}
		endpoints = append(endpoints[:len(endpoints):len(endpoints)], more...)
	}
	owner := map[string]string{}
	for _, a := range served {
		for _, c := range a.Card().Capabilities {
			owner[c] = fmt.Sprintf("the built-in agent %q", a.Card().Name)
		}
	}
	for _, e := range endpoints {
		r, err := a2aagent.New(ctx, a2aagent.Config{Endpoint: e, Refresh: f.refresh, Logger: log})
		if err != nil {
			close()
			code := exitUsage
			if errors.Is(err, a2aagent.ErrUnavailable) {
				code = exitFailed
			}
			return nil, func() {}, &exitError{code: code, msg: "--a2a-agent: " + err.Error()}
		}
		remotes = append(remotes, r)
		for _, c := range r.Capabilities() {
			if other, dup := owner[c]; dup {
				close()
				return nil, func() {}, &exitError{code: exitUsage, msg: fmt.Sprintf("--a2a-agent %s: %v: a skill of %q makes capability %q, which %s serves already; give the agent a prefix (;prefix=NAME_)",
					e.URL, a2aagent.ErrCollision, r.Name(), c, other)}
			}
			owner[c] = fmt.Sprintf("the A2A agent %q at %s", r.Name(), e.URL)
		}
		log.Info("serving a remote A2A agent", "agent", r.Name(), "url", e.URL, "capabilities", r.Capabilities())
		list = append(list, r.Agents()...)
	}
	return list, close, nil
}
