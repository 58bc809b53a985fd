package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/agentbus/agentbus/api"
	sdk "github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	engine "github.com/agentbus/agentbus/workflow"
)

// client is a command's handle on a gateway: the settings the commands
// give it, over the Go SDK (package client), which holds all the wire
// logic — requests, error answers, following with resume.
type client struct {
	base   string
	tenant string
	token  string
	http   *http.Client
	// notFoundGrace is how long follow keeps asking about a workflow the
	// gateway does not know: a just-submitted one has no checkpoint until
	// an orchestrator takes it (ask), while an id given by hand that is
	// unknown is an answer to report at once (watch: 0).
	notFoundGrace time.Duration
}

func newClient(base, tenant string) *client {
	return &client{base: strings.TrimRight(base, "/"), tenant: tenant, http: &http.Client{}, notFoundGrace: 10 * time.Second}
}

// newClientFor builds a client from the common client flags.
func newClientFor(f clientFlags) *client {
	c := newClient(f.url, f.tenant)
	c.token = f.token
	return c
}

// sdk is the SDK client for the current settings.
func (c *client) sdk() (*sdk.Client, error) {
	grace := c.notFoundGrace
	if grace == 0 {
		grace = -1 // the SDK's zero means its default
	}
	return sdk.New(sdk.Config{URL: c.base, Tenant: c.tenant, Token: c.token, HTTPClient: c.http, NotFoundGrace: grace})
}

func (c *client) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	s, err := c.sdk()
	if err != nil {
		return nil, err
	}
	return s.Do(ctx, method, path, body)
}

// apiErr reads an error answer: the gateway's message, then every
// problem with where it is (query parameter, header, path parameter or
// JSON pointer into the body).
func apiErr(resp *http.Response) error { return sdk.ReadError(resp) }

func (c *client) submit(ctx context.Context, req api.SubmitRequest, opts ...sdk.SubmitOption) (api.SubmitResponse, error) {
	s, err := c.sdk()
	if err != nil {
		return api.SubmitResponse{}, err
	}
	return s.Submit(ctx, req, opts...)
}

// follow streams a workflow's frames after offset from, calling fn for
// each — a reset frame too: the live view and the printer show it —
// until the terminal frame; the SDK reconnects from the last offset seen
// if the connection drops, so no event is lost or repeated.
func (c *client) follow(ctx context.Context, workflow string, from uint64, fn func(events.Frame) error) (events.Frame, error) {
	var last events.Frame
	s, err := c.sdk()
	if err != nil {
		return last, err
	}
	for f, err := range s.Follow(ctx, workflow, from) {
		if err != nil && !errors.Is(err, sdk.ErrReset) {
			return last, err
		}
		last = f
		if err := fn(f); err != nil {
			return last, err
		}
	}
	return last, nil
}

// checkpoint reads a workflow's state from GET /v1/workflows/{id}: its
// plan and stages and each step's state, which the event stream does not
// carry (the live view draws the plan from it).
func (c *client) checkpoint(ctx context.Context, wf string) (engine.Checkpoint, error) {
	s, err := c.sdk()
	if err != nil {
		return engine.Checkpoint{}, err
	}
	return s.State(ctx, wf)
}
