package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/orchestrator"
)

// client talks to a gateway over HTTP.
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

func (c *client) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(gateway.TenantHeader, c.tenant)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach agentbus at %s: %w", c.base, err)
	}
	return resp, nil
}

// apiErr turns an error answer into a readable error: the gateway's
// message, then every problem with where it is (query parameter, header,
// path parameter or JSON pointer into the body).
func apiErr(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Error struct {
			Code     string            `json:"code"`
			Message  string            `json:"message"`
			Problems []gateway.Problem `json:"problems"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		if msg := errorsList(body); msg != "" {
			return fmt.Errorf("%s: %s", resp.Status, msg)
		}
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", resp.Status, e.Error.Message)
	for _, p := range e.Error.Problems {
		if p.In == "" && p.Pointer == "" && p.Name == "" {
			fmt.Fprintf(&b, "\n  %s", p.Message)
			continue
		}
		fmt.Fprintf(&b, "\n  %s", p)
	}
	return errors.New(b.String())
}

// errorsList reads an error answer of the shape {"errors": [{"in",
// "name", "message"}]} as "query parameter from: message; …", or "".
func errorsList(body []byte) string {
	var e struct {
		Errors []struct{ In, Name, Pointer, Message string } `json:"errors"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	var parts []string
	for _, p := range e.Errors {
		in := p.In
		if in == "query" {
			in = "query parameter"
		}
		where := strings.TrimSpace(in + " " + cmp.Or(p.Name, p.Pointer))
		if where != "" {
			where += ": "
		}
		parts = append(parts, where+p.Message)
	}
	return strings.Join(parts, "; ")
}

func (c *client) submit(ctx context.Context, req gateway.SubmitRequest) (gateway.SubmitResponse, error) {
	body, _ := json.Marshal(req)
	resp, err := c.do(ctx, http.MethodPost, "/v1/workflows", body)
	if err != nil {
		return gateway.SubmitResponse{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return gateway.SubmitResponse{}, apiErr(resp)
	}
	var out gateway.SubmitResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("reading the answer: %w", err)
	}
	return out, nil
}

// follow streams a workflow's frames after offset from, calling fn for
// each, until the terminal frame; it reconnects from the last offset seen if
// the connection drops, so no event is lost or repeated.
func (c *client) follow(ctx context.Context, workflow string, from uint64, fn func(events.Frame) error) (events.Frame, error) {
	var last events.Frame
	var epoch string // the events stream's, from the first connected frame
	notFoundUntil := time.Now().Add(c.notFoundGrace)
	for attempt := 0; ; attempt++ {
		done, err := c.followOnce(ctx, workflow, &from, &epoch, func(f events.Frame) error { last = f; return fn(f) })
		if done || ctx.Err() != nil {
			return last, err
		}
		var nf *notFound
		if errors.As(err, &nf) && !time.Now().Before(notFoundUntil) {
			return last, err
		}
		if err != nil && !errors.As(err, &nf) && attempt >= 20 {
			return last, err
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// notFound is the gateway's 404 for a workflow.
type notFound struct{ err error }

func (n *notFound) Error() string { return n.err.Error() }

func (n *notFound) Unwrap() error { return n.err }

// followOnce reads one SSE connection; done reports the terminal frame seen
// (or an error that retrying cannot fix). from moves with each frame's id:
// an event's offset, or a reset's resume point; epoch is the stream's, sent
// back on a reconnect so that a recreated stream answers with a reset
// rather than with offsets that mean something else there.
func (c *client) followOnce(ctx context.Context, workflow string, from *uint64, epoch *string, fn func(events.Frame) error) (done bool, err error) {
	path := "/v1/workflows/" + workflow + "/events?from=" + strconv.FormatUint(*from, 10)
	if *epoch != "" {
		path += "&epoch=" + url.QueryEscape(*epoch)
	}
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNoContent:
		// Resumed at or past the terminal event: the state says how it ended.
		st, err := c.state(ctx, workflow)
		if err != nil {
			return true, err
		}
		return true, fn(events.Frame{Offset: *from, WorkflowID: workflow, TenantID: c.tenant, Type: terminalType(st)})
	case resp.StatusCode == http.StatusNotFound:
		return false, &notFound{apiErr(resp)}
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return true, apiErr(resp)
	case resp.StatusCode != http.StatusOK:
		return false, apiErr(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	var event, data, id string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event == "connected" && *epoch == "" {
				var c struct {
					Epoch string `json:"epoch"`
				}
				if json.Unmarshal([]byte(data), &c) == nil {
					*epoch = c.Epoch
				}
			}
			if event != "" && event != "connected" && data != "" {
				var f events.Frame
				if err := json.Unmarshal([]byte(data), &f); err != nil {
					return true, fmt.Errorf("bad frame from the gateway: %w", err)
				}
				if n, err := strconv.ParseUint(id, 10, 64); err == nil {
					*from = n
				}
				if err := fn(f); err != nil {
					return true, err
				}
				if f.Terminal() {
					return true, nil
				}
			}
			event, data, id = "", "", ""
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			data += line[len("data: "):]
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	return false, errors.New("event stream ended early")
}

// state reads a workflow's status from GET /v1/workflows/{id}.
func (c *client) state(ctx context.Context, workflow string) (events.State, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/workflows/"+workflow, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", apiErr(resp)
	}
	var st struct {
		Status events.State `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return "", fmt.Errorf("reading the state: %w", err)
	}
	return st.Status, nil
}

// checkpoint reads a workflow's state from GET /v1/workflows/{id}: its
// plan and stages and each step's state, which the event stream does not
// carry (the live view draws the plan from it).
func (c *client) checkpoint(ctx context.Context, workflow string) (orchestrator.Checkpoint, error) {
	var cp orchestrator.Checkpoint
	resp, err := c.do(ctx, http.MethodGet, "/v1/workflows/"+workflow, nil)
	if err != nil {
		return cp, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return cp, apiErr(resp)
	}
	if err := json.NewDecoder(resp.Body).Decode(&cp); err != nil {
		return cp, fmt.Errorf("reading the state: %w", err)
	}
	return cp, nil
}

// terminalType maps a final workflow state to its terminal frame type.
func terminalType(s events.State) string {
	switch s {
	case events.StateCompleted:
		return events.TypeComplete.Short()
	case events.StateCanceled:
		return events.TypeCancelled.Short()
	default:
		return events.TypeError.Short()
	}
}
