package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbus/agentbus/bus"
	sdk "github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
)

// connect opens the client bench submits with and starts its follower.
func (f benchFlags) connect(ctx context.Context) (*benchTarget, error) {
	if f.nats == "" {
		c, err := sdk.New(sdk.Config{URL: f.url, Tenant: f.tenant, Token: f.token,
			HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: f.concurrency + 4}}})
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--url: %v", err)}
		}
		t := &benchTarget{c: c, close: func() {}}
		if f.follow == "workflow" {
			t.follower = newWorkflowFollower(c)
			return t, nil
		}
		fctx, cancel := context.WithCancel(ctx)
		tf, err := startHTTPTenantFeed(fctx, c)
		if err != nil {
			cancel()
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("following the tenant feed of %s at %s: %v", f.tenant, f.url, err)}
		}
		t.follower, t.close = tf, cancel
		return t, nil
	}
	nf := natsFlags{nats: f.nats, connectTimeout: 10 * time.Second, logLevel: "error"}
	log, err := nf.logger(nil)
	if err != nil {
		return nil, err
	}
	b, err := nf.dial(ctx, "agentbus-bench", log)
	if err != nil {
		return nil, err
	}
	c, err := sdk.NewNATS(b, sdk.NATSConfig{Tenant: f.tenant})
	if err != nil {
		b.Close()
		return nil, &exitError{code: exitUsage, msg: err.Error()}
	}
	t := &benchTarget{c: c, close: func() { _ = c.Close(); b.Close() }}
	if f.follow == "workflow" {
		t.follower = newWorkflowFollower(c)
		return t, nil
	}
	fctx, cancel := context.WithCancel(ctx)
	tf, err := startNATSTenantFeed(fctx, b, f.tenant)
	if err != nil {
		cancel()
		t.close()
		return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("following the events of tenant %s on NATS %s: %v", f.tenant, f.nats, err)}
	}
	t.follower, t.close = tf, func() { cancel(); _ = c.Close(); b.Close() }
	return t, nil
}

// tracker hands each expected workflow's outcome to whoever waits for it:
// the part every tenant-wide follower shares. Safe for concurrent use.
type tracker struct {
	mu      sync.Mutex
	waiting map[string]chan benchOutcome
	// ended is why the feed stopped, once it did: every workflow still
	// expected, and every one expected later, ends with it.
	ended error
}

func newTracker() *tracker { return &tracker{waiting: map[string]chan benchOutcome{}} }

func (t *tracker) expect(id string) <-chan benchOutcome {
	ch := make(chan benchOutcome, 1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended != nil {
		ch <- benchOutcome{at: time.Now(), message: t.ended.Error()}
		return ch
	}
	t.waiting[id] = ch
	return ch
}

func (t *tracker) submitted(context.Context, string) {}

func (t *tracker) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.waiting, id)
}

// deliver hands o to the workflow's waiter, if bench expects it (the
// tenant's other workflows are not bench's); the first outcome wins.
func (t *tracker) deliver(id string, o benchOutcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ch, ok := t.waiting[id]; ok {
		delete(t.waiting, id)
		ch <- o
	}
}

// end fails every expected workflow with err: the feed is gone.
func (t *tracker) end(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ended = err
	for id, ch := range t.waiting {
		delete(t.waiting, id)
		ch <- benchOutcome{at: time.Now(), message: err.Error()}
	}
}

// startNATSTenantFeed follows the tenant's events on NATS with one
// ordered consumer (bus.FollowTenant) from the newest event now: each
// workflow's terminal event, the complete one with every step's output
// and latency, reaches its waiter.
func startNATSTenantFeed(ctx context.Context, b *bus.Bus, tenant string) (*tracker, error) {
	after, err := b.TenantLastOffset(ctx, tenant)
	if err != nil {
		return nil, err
	}
	t := newTracker()
	go func() {
		err := b.FollowTenant(ctx, tenant, after, func(_ context.Context, r bus.Record) error {
			e := r.Envelope
			if e.Type.Terminal() {
				t.deliver(e.WorkflowID, terminalOutcome(time.Now(), e.Type.Short(), e.Data))
			}
			return nil
		})
		if ctx.Err() == nil {
			t.end(fmt.Errorf("the tenant's event feed ended: %v", err))
		}
	}()
	return t, nil
}

// terminalOutcome reads a terminal event's data (complete, error or
// cancelled) into an outcome.
func terminalOutcome(at time.Time, typ string, data json.RawMessage) benchOutcome {
	o := benchOutcome{at: at}
	switch typ {
	case events.TypeComplete.Short():
		var c events.Complete
		if err := json.Unmarshal(data, &c); err != nil {
			o.state, o.message = events.StateFailed, fmt.Sprintf("its complete event does not read: %v", err)
			return o
		}
		o.state = events.StateCompleted
		o.outputs = make(map[string]bool, len(c.Outputs))
		for id := range c.Outputs {
			o.outputs[id] = true
		}
		o.steps = make(map[string]stepTime, len(c.Steps))
		for id, s := range c.Steps {
			o.steps[id] = stepTime{queuedMS: s.QueuedMS, runMS: s.RunMS}
		}
	case events.TypeError.Short():
		var e events.Error
		_ = json.Unmarshal(data, &e)
		o.state, o.message = events.StateFailed, fmt.Sprintf("%s: %s", e.Code, e.Message)
		if e.StepID != "" {
			o.message += " (step " + e.StepID + ")"
		}
	default:
		var c events.Cancelled
		_ = json.Unmarshal(data, &c)
		o.state, o.message = events.StateCanceled, c.Reason
	}
	return o
}

// workflowFollower follows each workflow on its own (Client.Wait: an SSE
// stream each over HTTP, a follower each on NATS: bus.Follow, with no
// consumer once the events stream republishes). Safe for
// concurrent use.
type workflowFollower struct {
	c       *sdk.Client
	mu      sync.Mutex
	waiting map[string]*followed
}

type followed struct {
	ch     chan benchOutcome
	cancel context.CancelFunc
}

func newWorkflowFollower(c *sdk.Client) *workflowFollower {
	return &workflowFollower{c: c, waiting: map[string]*followed{}}
}

func (w *workflowFollower) expect(id string) <-chan benchOutcome {
	f := &followed{ch: make(chan benchOutcome, 1), cancel: func() {}}
	w.mu.Lock()
	w.waiting[id] = f
	w.mu.Unlock()
	return f.ch
}

func (w *workflowFollower) submitted(ctx context.Context, id string) {
	ctx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	f, ok := w.waiting[id]
	if ok {
		f.cancel = cancel
	}
	w.mu.Unlock()
	if !ok {
		cancel()
		return
	}
	go func() {
		defer cancel()
		res, err := w.c.Wait(ctx, id)
		at := time.Now()
		var o benchOutcome
		var we *sdk.WorkflowError
		switch {
		case err == nil:
			data, _ := json.Marshal(res)
			o = terminalOutcome(at, events.TypeComplete.Short(), data)
		case errors.As(err, &we):
			o = benchOutcome{at: at, state: events.StateFailed, message: fmt.Sprintf("%s: %s", we.Code, we.Message)}
			if we.Code == "canceled" {
				o.state = events.StateCanceled
			}
		case ctx.Err() != nil:
			return
		default:
			o = benchOutcome{at: at, message: fmt.Sprintf("following it failed: %v", err)}
		}
		f.ch <- o
	}()
}

func (w *workflowFollower) forget(id string) {
	w.mu.Lock()
	f, ok := w.waiting[id]
	delete(w.waiting, id)
	w.mu.Unlock()
	if ok {
		f.cancel()
	}
}

// httpTenantFeed follows the gateway's tenant feed (GET
// /v1/workflows/events, SSE, final states only): one stream for every
// workflow; an outcome it delivers says the workflow ended, and bench
// reads its state for the steps (fromState). It resumes from the last
// offset after a dropped stream.
type httpTenantFeed struct {
	*tracker
	c *sdk.Client
}

// feedPath asks for final states only: the feed then carries two frames a
// workflow (its last status and its terminal event).
const feedPath = "/v1/workflows/events?status=completed,failed,canceled,rejected"

// startHTTPTenantFeed connects the feed and returns once it is live.
func startHTTPTenantFeed(ctx context.Context, c *sdk.Client) (*httpTenantFeed, error) {
	f := &httpTenantFeed{tracker: newTracker(), c: c}
	resp, err := c.Do(ctx, http.MethodGet, feedPath, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, sdk.ReadError(resp)
	}
	go f.run(ctx, resp)
	return f, nil
}

// run reads the feed, reconnecting after its last offset, until ctx ends
// or it failed ten times in a row.
func (f *httpTenantFeed) run(ctx context.Context, resp *http.Response) {
	var last uint64
	var epoch string
	fails := 0
	for {
		progressed, err := f.read(resp, &last, &epoch)
		resp.Body.Close()
		if ctx.Err() != nil {
			return
		}
		if progressed {
			fails = 0
		}
		for {
			fails++
			if fails > 10 {
				f.end(fmt.Errorf("the tenant feed broke and could not be resumed: %v", err))
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(fails) * 100 * time.Millisecond):
			}
			path := feedPath + "&from=" + strconv.FormatUint(last, 10) + "&epoch=" + epoch
			resp, err = f.c.Do(ctx, http.MethodGet, path, nil)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = sdk.ReadError(resp)
				resp.Body.Close()
			}
			if err == nil {
				break
			}
		}
	}
}

// read handles one SSE stream's frames; last and epoch follow them.
func (f *httpTenantFeed) read(resp *http.Response, last *uint64, epoch *string) (progressed bool, err error) {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data += line[len("data: "):]
		case line == "" && data != "":
			var fr events.Frame
			if json.Unmarshal([]byte(data), &fr) == nil {
				progressed = true
				f.frame(event, fr, last, epoch)
			}
			event, data = "", ""
		}
	}
	if err := sc.Err(); err != nil {
		return progressed, err
	}
	return progressed, errors.New("the stream ended")
}

func (f *httpTenantFeed) frame(event string, fr events.Frame, last *uint64, epoch *string) {
	switch event {
	case gateway.FrameConnected:
		var c gateway.FeedConnected
		if json.Unmarshal(fr.Data, &c) == nil {
			*epoch, *last = c.Epoch, c.From
		}
	case gateway.FrameReset:
		var r struct {
			ResumeFrom uint64 `json:"resume_from"`
		}
		if json.Unmarshal(fr.Data, &r) == nil {
			*last = r.ResumeFrom
		}
	case gateway.FrameWorkflowStatus:
		*last = fr.Offset
		var ws gateway.WorkflowStatus
		if json.Unmarshal(fr.Data, &ws) == nil && ws.Final {
			f.deliver(ws.WorkflowID, benchOutcome{at: time.Now(), state: ws.State, message: ws.Message, fromState: true})
		}
	}
}
