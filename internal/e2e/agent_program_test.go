package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// shoutProgram is an example agent in a language other than Go, written
// only from the README's wire section, that serves "shout" (upper-casing
// input.text) as examples/ts-agent does: configured by NATS_URL,
// AGENT_ACK_WAIT_MS, AGENT_MAX_DELIVER and AGENT_WORK_MS, and logging one
// JSON object a line on stdout ("ready", "step taken", "working", …).
type shoutProgram struct {
	// prefix starts the ids of the test's workflows: "ts" gives ts-1 … ts-4.
	prefix string
	// language is named in the text the first workflow shouts.
	language string
	// source is the ce-source of the events the program publishes.
	source string
	// command returns a command that runs one instance of the program,
	// its environment extended with env.
	command func(env []string) *exec.Cmd
	// hands: the program hands its answers straight to an orchestrator
	// first (README step 4, optional) and logs which way each went.
	hands bool
}

// testShoutProgram runs p in real workflows on an embedded agentbus: two
// instances share the consumer; a step that outlasts AckWait is delivered
// once (in-progress acks); one killed mid-step hands its step to the next
// delivery, which completes it once; a bad input fails the workflow with
// the agent's reason; a step past MaxDeliver is dead-lettered and fails
// the workflow.
func testShoutProgram(t *testing.T, p shoutProgram) {
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	logs := &agentLogs{}
	// An instance ends with the test or subtest that starts it.
	start := func(t *testing.T, name string, env []string) { startAgent(t, name, p.command(env), logs) }
	wf := func(n int) string { return fmt.Sprintf("%s-%d", p.prefix, n) }
	// AckWait 1.5s and 3s of work: without in-progress acks the idle
	// instance would be handed the step again.
	env := []string{"NATS_URL=" + s.env.URL, "AGENT_ACK_WAIT_MS=1500", "AGENT_WORK_MS=3000"}
	start(t, "a", env)
	logs.await(ctx, t, func(l agentLine) bool { return l.Agent == "a" && l.Msg == "ready" })
	start(t, "b", env)
	logs.await(ctx, t, func(l agentLine) bool { return l.Agent == "b" && l.Msg == "ready" })

	t.Run("completes with in-progress acks", func(t *testing.T) {
		id, text := wf(1), "hello from "+p.language
		s.submitShout(ctx, t, id, map[string]any{"text": text})
		s.wantShouted(ctx, t, id, strings.ToUpper(text))
		if got := logs.deliveries(id); fmt.Sprint(got) != "[1]" {
			t.Errorf("step of %s delivered %v, want once ([1]): in-progress acks did not hold it", id, got)
		}
		if p.hands {
			done := logs.await(ctx, t, func(l agentLine) bool { return l.Workflow == id && l.Msg == "step completed" })
			if done.Answer != "handed" {
				t.Errorf("the step of %s was answered %q, want handed: an orchestrator listens on the result subject", id, done.Answer)
			}
		}
		h := s.rawEvents(ctx, t, id, p.source)
		for _, typ := range []events.Type{events.TypeProgress, events.TypeArtifact} {
			got := h["agent "+string(typ)]
			if len(got) != 1 {
				t.Fatalf("%d %s events of the agent in %s's log, want 1", len(got), typ, id)
			}
			want := map[string]string{"ce-specversion": "1.0", "ce-tenantid": gateway.DefaultTenant,
				"ce-workflowid": id, "ce-stepid": "loud", "Content-Type": "application/json",
				"ce-id": "", "ce-time": "", "Nats-Msg-Id": ""}
			for k, v := range want {
				if g := got[0].Get(k); g == "" || (v != "" && g != v) {
					t.Errorf("%s header %s = %q, want %q", typ, k, g, v)
				}
			}
		}
		// Well-formed: the gateway hands them to clients.
		if frames := s.sseTypes(ctx, t, id); !strings.Contains(frames, "progress artifact") {
			t.Errorf("SSE frames of %s: %s; want the agent's progress and artifact", id, frames)
		}
	})

	t.Run("killed mid-step, redelivered, completes once", func(t *testing.T) {
		id := wf(2)
		s.submitShout(ctx, t, id, map[string]any{"text": "crash me once"})
		working := logs.await(ctx, t, func(l agentLine) bool { return l.Msg == "working" && l.Workflow == id })
		logs.proc(working.Agent).kill(t)
		start(t, working.Agent+"2", env)
		s.wantShouted(ctx, t, id, "CRASH ME ONCE")
		if got := logs.deliveries(id); fmt.Sprint(got) != "[1 2]" {
			t.Errorf("step of %s delivered %v, want [1 2]", id, got)
		}
		h := s.rawEvents(ctx, t, id, p.source)
		// The redelivery repeats its events' Nats-Msg-Id: stored once.
		for _, key := range []string{"agent " + string(events.TypeProgress), "agent " + string(events.TypeArtifact), string(events.TypeComplete)} {
			if n := len(h[key]); n != 1 {
				t.Errorf("%d %s events in %s's log, want 1", n, key, id)
			}
		}
	})

	t.Run("bad input fails the workflow with the reason", func(t *testing.T) {
		id := wf(3)
		s.submitShout(ctx, t, id, map[string]any{"words": 3})
		end := s.waitEvent(ctx, t, gateway.DefaultTenant, id, func(e events.Envelope) bool { return e.Type.Terminal() })
		if end.Type != events.TypeError || !strings.Contains(string(end.Data), "input.text must be a string") {
			t.Fatalf("%s ended with %s %s, want error naming input.text", id, end.Type, end.Data)
		}
	})

	t.Run("past MaxDeliver, dead-lettered and failed", func(t *testing.T) {
		id := wf(4)
		logs.stopAll() // only agents that allow one delivery from here on
		one := append(slices.Clip(env), "AGENT_MAX_DELIVER=1")
		start(t, "d", one)
		s.submitShout(ctx, t, id, map[string]any{"text": "never"})
		logs.await(ctx, t, func(l agentLine) bool { return l.Msg == "working" && l.Workflow == id })
		logs.proc("d").kill(t)
		start(t, "e", one)
		end := s.waitEvent(ctx, t, gateway.DefaultTenant, id, func(e events.Envelope) bool { return e.Type.Terminal() })
		if end.Type != events.TypeError || !strings.Contains(string(end.Data), "dead-lettered") {
			t.Fatalf("%s ended with %s %s, want an error saying it was dead-lettered", id, end.Type, end.Data)
		}
		dl := s.lastMsg(ctx, t, subjects.StreamDeadLetter, "agentbus."+gateway.DefaultTenant+".deadletter.shout")
		if dl.Header.Get("ce-workflowid") != id || dl.Header.Get("Agentbus-Deadletter-Reason") == "" ||
			dl.Header.Get("Agentbus-Deadletter-Deliveries") != "2" {
			t.Errorf("dead letter headers %v: want %s's step request with a reason", dl.Header, id)
		}
	})
}

// lastMsg returns the last message stored on subject in stream.
func (s *stack) lastMsg(ctx context.Context, t *testing.T, stream, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	js, err := jetstream.New(s.env.Bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatalf("last message on %s in %s: %v", subject, stream, err)
	}
	return m
}

// agentLine is one JSON line an agent process logged, tagged with the
// process's name.
type agentLine struct {
	Agent    string `json:"-"`
	Msg      string `json:"msg"`
	Workflow string `json:"workflow"`
	Step     string `json:"step"`
	Delivery int    `json:"delivery"`
	Error    string `json:"error"`
	Answer   string `json:"answer"` // "handed" or "streamed", when the program says
}

// agentLogs gathers the lines of every agent process of a test; safe for
// concurrent use.
type agentLogs struct {
	mu      sync.Mutex
	lines   []agentLine
	procs   map[string]*agentProc
	changed chan struct{} // closed and replaced at every line
}

func (l *agentLogs) add(line agentLine) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// await returns the first line that satisfies ok, waiting for it until ctx ends.
func (l *agentLogs) await(ctx context.Context, t *testing.T, ok func(agentLine) bool) agentLine {
	t.Helper()
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if line.Msg == "fatal" {
				l.mu.Unlock()
				t.Fatalf("agent %s failed: %+v", line.Agent, line)
			}
			if ok(line) {
				l.mu.Unlock()
				return line
			}
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no such agent log line before the deadline; got %+v", l.snapshot())
		}
	}
}

func (l *agentLogs) snapshot() []agentLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]agentLine(nil), l.lines...)
}

// deliveries lists the delivery counts with which any agent took a step of workflow.
func (l *agentLogs) deliveries(workflow string) []int {
	var out []int
	for _, line := range l.snapshot() {
		if line.Msg == "step taken" && line.Workflow == workflow {
			out = append(out, line.Delivery)
		}
	}
	return out
}

// stopAll ends every agent process with SIGTERM and waits for them.
func (l *agentLogs) stopAll() {
	l.mu.Lock()
	var wg sync.WaitGroup
	for _, p := range l.procs {
		wg.Go(func() { p.stop(syscall.SIGTERM) })
	}
	l.mu.Unlock()
	wg.Wait()
}

func (l *agentLogs) proc(name string) *agentProc {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.procs[name]
}

// agentProc is one running agent process.
type agentProc struct {
	cmd  *exec.Cmd
	read chan struct{} // closed when its stdout is read to the end
	once sync.Once
}

// stop ends the process with sig (SIGKILL after 10 s) and waits for it;
// safe to call twice.
func (p *agentProc) stop(sig syscall.Signal) {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(sig)
		kill := time.AfterFunc(10*time.Second, func() { _ = p.cmd.Process.Kill() })
		defer kill.Stop()
		<-p.read
		_ = p.cmd.Wait()
	})
}

// kill crashes the process, as a machine failing would.
func (p *agentProc) kill(t *testing.T) {
	t.Helper()
	p.stop(syscall.SIGKILL)
	if p.cmd.ProcessState.Success() {
		t.Fatalf("the agent exited cleanly instead of being killed")
	}
}

// startAgent starts cmd, an agent program logging one JSON object a line
// on stdout, as the process named name; it is stopped with SIGTERM (then
// killed) when the test ends.
func startAgent(t *testing.T, name string, cmd *exec.Cmd, logs *agentLogs) *agentProc {
	t.Helper()
	cmd.Stderr = &testWriter{t: t, prefix: name + " stderr: "}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &agentProc{cmd: cmd, read: make(chan struct{})}
	logs.mu.Lock()
	if logs.procs == nil {
		logs.procs = map[string]*agentProc{}
	}
	logs.procs[name] = p
	logs.mu.Unlock()
	go func() {
		defer close(p.read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var line agentLine
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Logf("%s: %s", name, sc.Bytes())
				continue
			}
			line.Agent = name
			t.Logf("%s: %s", name, sc.Bytes())
			logs.add(line)
		}
	}()
	t.Cleanup(func() { p.stop(syscall.SIGTERM) })
	return p
}

// testWriter logs what a child process writes.
type testWriter struct {
	t      *testing.T
	prefix string
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s%s", w.prefix, bytes.TrimRight(p, "\n"))
	return len(p), nil
}

// submitShout submits a one-step plan: step "loud" of capability shout.
func (s *stack) submitShout(ctx context.Context, t *testing.T, id string, input any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"workflow_id": id, "plan": map[string]any{"steps": []any{
		map[string]any{"id": "loud", "capability": "shout", "input": input}}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base()+"/v1/workflows", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("submit %s: %s: %s", id, resp.Status, b)
	}
}

// wantShouted waits for the workflow's end and checks it completed with
// the agent's output.
func (s *stack) wantShouted(ctx context.Context, t *testing.T, id, want string) {
	t.Helper()
	end := s.waitEvent(ctx, t, gateway.DefaultTenant, id, func(e events.Envelope) bool { return e.Type.Terminal() })
	if end.Type != events.TypeComplete {
		t.Fatalf("%s ended with %s: %s", id, end.Type, end.Data)
	}
	var done struct {
		Outputs map[string]struct {
			Text string `json:"text"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(end.Data, &done); err != nil {
		t.Fatal(err)
	}
	if got := done.Outputs["loud"].Text; got != want {
		t.Fatalf("%s: step loud's output %q, want %q (%s)", id, got, want, end.Data)
	}
}

// rawEvents reads the workflow's stored event messages from JetStream, up
// to the terminal one, and returns their headers by ce-type, the agent's
// (ce-source source) under "agent " + ce-type.
func (s *stack) rawEvents(ctx context.Context, t *testing.T, id, source string) map[string][]nats.Header {
	t.Helper()
	js, err := jetstream.New(s.env.Bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.OrderedConsumer(ctx, subjects.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{fmt.Sprintf("agentbus.%s.events.%s", gateway.DefaultTenant, id)}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]nats.Header{}
	for {
		m, err := c.Next(jetstream.FetchContext(ctx))
		if err != nil {
			t.Fatalf("reading %s's events (got %d types): %v", id, len(out), err)
		}
		typ := m.Headers().Get("ce-type")
		key := typ
		if m.Headers().Get("ce-source") == source {
			key = "agent " + typ
		}
		out[key] = append(out[key], m.Headers())
		if events.Type(typ).Terminal() {
			return out
		}
	}
}

// sseTypes reads the workflow's events through the gateway, as a client
// does, and returns their types in order, space-separated.
func (s *stack) sseTypes(ctx context.Context, t *testing.T, id string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base()+"/v1/workflows/"+id+"/events?from=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var types []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if typ, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			types = append(types, typ)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	return strings.Join(types, " ")
}
