package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/internal/stacktest"
)

// deadline bounds every wait in these tests; nothing sleeps.
const deadline = 20 * time.Second

// stack is one test's embedded NATS server with an echo worker, an
// orchestrator and a gateway served on a real loopback listener.
type stack struct {
	env    *bustest.Env
	base   string // http://127.0.0.1:PORT
	client *http.Client
}

// startStack starts the stack; tweak, if given, adjusts the gateway's
// config. Everything stops at cleanup.
func startStack(t testing.TB, tweak ...func(*gateway.Config)) *stack {
	t.Helper()
	env := bustest.New(t)
	startBackend(t, env)
	return startGateway(t, env, tweak...)
}

// startBackend runs an echo worker and an orchestrator on env until cleanup.
func startBackend(t testing.TB, env *bustest.Env) { stacktest.StartOn(t, env, stacktest.Options{}) }

// startGateway serves a gateway for env on a loopback port until cleanup.
func startGateway(t testing.TB, env *bustest.Env, tweak ...func(*gateway.Config)) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(func() { cancel(); wg.Wait(); transport.CloseIdleConnections() })
	cfg := gateway.Config{Bus: env.Bus, Addr: "127.0.0.1:0", Logger: bustest.Logger(t)}
	for _, f := range tweak {
		f(&cfg)
	}
	g, err := gateway.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := g.Listen()
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := g.Run(ctx); err != nil {
			t.Errorf("gateway run: %v", err)
		}
	}()
	return &stack{env: env, base: "http://" + addr.String(), client: &http.Client{Transport: transport}}
}

// reply is a buffered HTTP answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as an object.
func (r reply) JSON() (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		return nil, fmt.Errorf("body %q is not a JSON object: %w", r.Body, err)
	}
	return m, nil
}

// apiErr is the body of a gateway error answer.
type apiErr struct {
	Error struct {
		Code     string `json:"code"`
		Message  string `json:"message"`
		Problems []struct {
			In      string `json:"in"`
			Name    string `json:"name"`
			Pointer string `json:"pointer"`
			Message string `json:"message"`
		} `json:"problems"`
	} `json:"error"`
}

// do sends one request and buffers the answer. header holds pairs
// name, value.
func (s *stack) do(ctx context.Context, method, path string, body []byte, header ...string) (reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return reply{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: reading body: %w", method, path, err)
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// mustDo is do that fails the test on a transport error.
func (s *stack) mustDo(t testing.TB, method, path string, body []byte, header ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	r, err := s.do(ctx, method, path, body, header...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// submitted is the 202 answer to POST /v1/workflows.
type submitted struct {
	WorkflowID    string `json:"workflow_id"`
	TenantID      string `json:"tenant_id"`
	Status        string `json:"status"`
	EventsURL     string `json:"events_url"`
	StateURL      string `json:"state_url"`
	EventsSubject string `json:"events_subject"`
}

// submit POSTs body and decodes a 202; any other status is an error.
func (s *stack) submit(ctx context.Context, body any, header ...string) (submitted, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return submitted{}, err
	}
	r, err := s.do(ctx, http.MethodPost, "/v1/workflows", b, header...)
	if err != nil {
		return submitted{}, err
	}
	if r.Status != http.StatusAccepted {
		return submitted{}, fmt.Errorf("POST /v1/workflows: status %d, want 202: %s", r.Status, r.Body)
	}
	var sub submitted
	if err := json.Unmarshal(r.Body, &sub); err != nil {
		return submitted{}, fmt.Errorf("POST /v1/workflows: %w: %s", err, r.Body)
	}
	return sub, nil
}

func (s *stack) mustSubmit(t testing.TB, body any, header ...string) submitted {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	sub, err := s.submit(ctx, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// sseFrame is one Server-Sent Event as read off the wire.
type sseFrame struct {
	ID    string
	Event string
	Data  string
}

// frame is the JSON data of every event frame but `connected`.
type frame struct {
	Offset     uint64          `json:"offset"`
	Epoch      string          `json:"epoch"`
	Type       string          `json:"type"`
	WorkflowID string          `json:"workflow_id"`
	TenantID   string          `json:"tenant_id"`
	StepID     string          `json:"step_id"`
	Data       json.RawMessage `json:"data"`
}

// connected is the JSON data of the first frame.
type connected struct {
	WorkflowID string  `json:"workflow_id"`
	Epoch      string  `json:"epoch"`
	From       *uint64 `json:"from"`
	LastOffset *uint64 `json:"last_offset"`
}

// stream is what one SSE request yielded.
type stream struct {
	Status   int
	Header   http.Header
	Body     []byte // the error body of a non-200 answer
	Frames   []sseFrame
	Comments []string
}

// errStopReading ends readSSE early without error.
var errStopReading = errors.New("stop reading")

// readSSE GETs path and parses frames until the server closes the stream
// (io.EOF), ctx ends (an error), or onFrame returns errStopReading.
func (s *stack) readSSE(ctx context.Context, path string, onFrame func(sseFrame, []string) error, header ...string) (stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return stream{}, err
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return stream{}, err
	}
	defer resp.Body.Close()
	out := stream{Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		out.Body, err = io.ReadAll(resp.Body)
		return out, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var cur sseFrame
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event == "" && data == nil && cur.ID == "" {
				continue // a comment-only block
			}
			cur.Data = strings.Join(data, "\n")
			out.Frames = append(out.Frames, cur)
			cur, data = sseFrame{}, nil
			if onFrame != nil {
				if err := onFrame(out.Frames[len(out.Frames)-1], out.Comments); errors.Is(err, errStopReading) {
					return out, nil
				} else if err != nil {
					return out, err
				}
			}
		case strings.HasPrefix(line, ":"):
			out.Comments = append(out.Comments, strings.TrimSpace(line[1:]))
			if onFrame != nil {
				if err := onFrame(sseFrame{}, out.Comments); errors.Is(err, errStopReading) {
					return out, nil
				} else if err != nil {
					return out, err
				}
			}
		case strings.HasPrefix(line, "id: "):
			cur.ID = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			cur.Event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):])
		default:
			return out, fmt.Errorf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("GET %s: stream did not end cleanly after %d frames (%s): %w", path, len(out.Frames), summary(out.Frames), err)
	}
	if cur.Event != "" || data != nil {
		return out, fmt.Errorf("GET %s: stream ended inside a frame", path)
	}
	return out, nil
}

// follow reads a workflow's SSE stream until the server closes it and checks
// the framing every stream must have: a `connected` first frame, then frames
// whose id equals their JSON offset, strictly increasing, the last one
// terminal. It returns the connected data and the decoded event frames.
func (s *stack) follow(ctx context.Context, path string, header ...string) (connected, []frame, error) {
	st, err := s.readSSE(ctx, path, nil, header...)
	if err != nil {
		return connected{}, nil, err
	}
	if st.Status != http.StatusOK {
		return connected{}, nil, fmt.Errorf("GET %s: status %d: %s", path, st.Status, st.Body)
	}
	if ct := st.Header.Get("Content-Type"); ct != "text/event-stream" {
		return connected{}, nil, fmt.Errorf("GET %s: Content-Type %q", path, ct)
	}
	return checkStream(st.Frames)
}

func (s *stack) mustFollow(t testing.TB, path string, header ...string) (connected, []frame) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	c, fs, err := s.follow(ctx, path, header...)
	if err != nil {
		t.Fatal(err)
	}
	return c, fs
}

func checkStream(fs []sseFrame) (connected, []frame, error) {
	var c connected
	if len(fs) == 0 || fs[0].Event != "connected" || fs[0].ID != "" {
		return c, nil, fmt.Errorf("first frame is not an id-less `connected`: %s", summary(fs))
	}
	if err := json.Unmarshal([]byte(fs[0].Data), &c); err != nil {
		return c, nil, fmt.Errorf("connected data %q: %w", fs[0].Data, err)
	}
	if c.Epoch == "" || c.From == nil || c.LastOffset == nil {
		return c, nil, fmt.Errorf("connected data lacks epoch, from or last_offset: %s", fs[0].Data)
	}
	var out []frame
	var prev uint64
	for _, sf := range fs[1:] {
		var f frame
		if err := json.Unmarshal([]byte(sf.Data), &f); err != nil {
			return c, out, fmt.Errorf("frame %s data %q: %w", sf.ID, sf.Data, err)
		}
		if sf.ID != strconv.FormatUint(f.Offset, 10) {
			return c, out, fmt.Errorf("frame id %q differs from its offset %d", sf.ID, f.Offset)
		}
		if f.Offset <= prev {
			return c, out, fmt.Errorf("offset %d after %d: %s", f.Offset, prev, summary(fs))
		}
		if sf.Event != f.Type || f.Epoch != c.Epoch || f.WorkflowID != c.WorkflowID {
			return c, out, fmt.Errorf("frame %s: event %q type %q epoch %q workflow %q; connected says epoch %q workflow %q",
				sf.ID, sf.Event, f.Type, f.Epoch, f.WorkflowID, c.Epoch, c.WorkflowID)
		}
		prev = f.Offset
		out = append(out, f)
	}
	if len(out) == 0 || !terminal(out[len(out)-1].Type) {
		return c, out, fmt.Errorf("stream closed without a terminal frame: %s", summary(fs))
	}
	return c, out, nil
}

func terminal(typ string) bool { return typ == "complete" || typ == "error" || typ == "cancelled" }

func summary(fs []sseFrame) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.ID + ":" + f.Event
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// state GETs a workflow's state and decodes it. The orchestrator stores a
// checkpoint before it publishes the events that checkpoint queued, so once
// a client has seen an event the state already reflects it: no polling.
func (s *stack) state(t testing.TB, path string, header ...string) map[string]any {
	t.Helper()
	r := s.mustDo(t, http.MethodGet, path, nil, header...)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	m, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// plan builds a plan body from steps "ID:capability:dep,dep".
func plan(steps ...string) map[string]any {
	var out []map[string]any
	for _, s := range steps {
		parts := strings.SplitN(s+"::", ":", 3)
		st := map[string]any{"id": parts[0], "capability": parts[1], "input": map[string]string{"from": parts[0]}}
		if deps := strings.Trim(parts[2], ":"); deps != "" {
			st["depends_on"] = strings.Split(deps, ",")
		}
		out = append(out, st)
	}
	return map[string]any{"steps": out}
}
