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
	"os"
	"os/exec"
	"path/filepath"
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

// The TypeScript agent in examples/ts-agent, written only from the README's
// wire section, serves "shout" in a real workflow: two instances share the
// consumer; a step that outlasts AckWait is delivered once (in-progress
// acks); one killed mid-step hands its step to the next delivery, which
// completes it once; a bad input fails the workflow with the agent's
// reason; a step past MaxDeliver is dead-lettered and fails the workflow.
func TestTypeScriptAgent(t *testing.T) {
	dir := buildTSAgent(t) // before the deadline starts: a cold npm ci takes a while
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	logs := &agentLogs{}
	// AckWait 1.5s and 3s of work: without in-progress acks the idle
	// instance would be handed the step again.
	env := []string{"NATS_URL=" + s.env.URL, "AGENT_ACK_WAIT_MS=1500", "AGENT_WORK_MS=3000"}
	startTSAgent(t, dir, "a", env, logs)
	logs.await(ctx, t, func(l agentLine) bool { return l.Agent == "a" && l.Msg == "ready" })
	startTSAgent(t, dir, "b", env, logs)
	logs.await(ctx, t, func(l agentLine) bool { return l.Agent == "b" && l.Msg == "ready" })

	t.Run("completes with in-progress acks", func(t *testing.T) {
		s.submitShout(ctx, t, "ts-1", map[string]any{"text": "hello from typescript"})
		s.wantShouted(ctx, t, "ts-1", "HELLO FROM TYPESCRIPT")
		if got := logs.deliveries("ts-1"); fmt.Sprint(got) != "[1]" {
			t.Errorf("step of ts-1 delivered %v, want once ([1]): in-progress acks did not hold it", got)
		}
		h := s.rawEvents(ctx, t, "ts-1")
		for _, typ := range []events.Type{events.TypeProgress, events.TypeArtifact} {
			got := h["agent "+string(typ)]
			if len(got) != 1 {
				t.Fatalf("%d %s events of the agent in ts-1's log, want 1", len(got), typ)
			}
			want := map[string]string{"ce-specversion": "1.0", "ce-tenantid": gateway.DefaultTenant,
				"ce-workflowid": "ts-1", "ce-stepid": "loud", "Content-Type": "application/json",
				"ce-id": "", "ce-time": "", "Nats-Msg-Id": ""}
			for k, v := range want {
				if g := got[0].Get(k); g == "" || (v != "" && g != v) {
					t.Errorf("%s header %s = %q, want %q", typ, k, g, v)
				}
			}
		}
		// Well-formed: the gateway hands them to clients.
		if frames := s.sseTypes(ctx, t, "ts-1"); !strings.Contains(frames, "progress artifact") {
			t.Errorf("SSE frames of ts-1: %s; want the agent's progress and artifact", frames)
		}
	})

	t.Run("killed mid-step, redelivered, completes once", func(t *testing.T) {
		s.submitShout(ctx, t, "ts-2", map[string]any{"text": "crash me once"})
		working := logs.await(ctx, t, func(l agentLine) bool { return l.Msg == "working" && l.Workflow == "ts-2" })
		logs.proc(working.Agent).kill(t)
		startTSAgent(t, dir, working.Agent+"2", env, logs)
		s.wantShouted(ctx, t, "ts-2", "CRASH ME ONCE")
		if got := logs.deliveries("ts-2"); fmt.Sprint(got) != "[1 2]" {
			t.Errorf("step of ts-2 delivered %v, want [1 2]", got)
		}
		h := s.rawEvents(ctx, t, "ts-2")
		// The redelivery repeats its events' Nats-Msg-Id: stored once.
		for _, key := range []string{"agent " + string(events.TypeProgress), "agent " + string(events.TypeArtifact), string(events.TypeComplete)} {
			if n := len(h[key]); n != 1 {
				t.Errorf("%d %s events in ts-2's log, want 1", n, key)
			}
		}
	})

	t.Run("bad input fails the workflow with the reason", func(t *testing.T) {
		s.submitShout(ctx, t, "ts-3", map[string]any{"words": 3})
		end := s.waitEvent(ctx, t, gateway.DefaultTenant, "ts-3", func(e events.Envelope) bool { return e.Type.Terminal() })
		if end.Type != events.TypeError || !strings.Contains(string(end.Data), "input.text must be a string") {
			t.Fatalf("ts-3 ended with %s %s, want error naming input.text", end.Type, end.Data)
		}
	})

	t.Run("past MaxDeliver, dead-lettered and failed", func(t *testing.T) {
		logs.stopAll() // only agents that allow one delivery from here on
		one := append(slices.Clip(env), "AGENT_MAX_DELIVER=1")
		startTSAgent(t, dir, "d", one, logs)
		s.submitShout(ctx, t, "ts-4", map[string]any{"text": "never"})
		logs.await(ctx, t, func(l agentLine) bool { return l.Msg == "working" && l.Workflow == "ts-4" })
		logs.proc("d").kill(t)
		startTSAgent(t, dir, "e", one, logs)
		end := s.waitEvent(ctx, t, gateway.DefaultTenant, "ts-4", func(e events.Envelope) bool { return e.Type.Terminal() })
		if end.Type != events.TypeError || !strings.Contains(string(end.Data), "dead-lettered") {
			t.Fatalf("ts-4 ended with %s %s, want an error saying it was dead-lettered", end.Type, end.Data)
		}
		dl := s.lastMsg(ctx, t, subjects.StreamDeadLetter, "agentbus."+gateway.DefaultTenant+".deadletter.shout")
		if dl.Header.Get("ce-workflowid") != "ts-4" || dl.Header.Get("Agentbus-Deadletter-Reason") == "" ||
			dl.Header.Get("Agentbus-Deadletter-Deliveries") != "2" {
			t.Errorf("dead letter headers %v: want ts-4's step request with a reason", dl.Header)
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

// buildTSAgent installs (npm ci, when node_modules is missing) and compiles
// examples/ts-agent, or skips the test when node or npm is absent.
func buildTSAgent(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found on PATH: the TypeScript agent example needs Node.js 18+ and npm (apt-get install nodejs npm)", tool)
		}
	}
	dir, err := filepath.Abs("../../examples/ts-agent")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@nats-io", "jetstream")); err != nil {
		run("ci")
	}
	run("run", "build")
	return dir
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
}

// agentLogs gathers the lines of every agent process of a test; safe for
// concurrent use.
type agentLogs struct {
	mu      sync.Mutex
	lines   []agentLine
	procs   map[string]*tsAgent
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

func (l *agentLogs) proc(name string) *tsAgent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.procs[name]
}

// tsAgent is one running agent process.
type tsAgent struct {
	cmd  *exec.Cmd
	read chan struct{} // closed when its stdout is read to the end
	once sync.Once
}

// stop ends the process with sig (SIGKILL after 10 s) and waits for it;
// safe to call twice.
func (p *tsAgent) stop(sig syscall.Signal) {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(sig)
		kill := time.AfterFunc(10*time.Second, func() { _ = p.cmd.Process.Kill() })
		defer kill.Stop()
		<-p.read
		_ = p.cmd.Wait()
	})
}

// kill crashes the process, as a machine failing would.
func (p *tsAgent) kill(t *testing.T) {
	t.Helper()
	p.stop(syscall.SIGKILL)
	if p.cmd.ProcessState.Success() {
		t.Fatalf("the agent exited cleanly instead of being killed")
	}
}

// startTSAgent runs the compiled agent as a child process named name; it
// is stopped with SIGTERM (then killed) when the test ends.
func startTSAgent(t *testing.T, dir, name string, env []string, logs *agentLogs) *tsAgent {
	t.Helper()
	cmd := exec.Command("node", "dist/agent.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &testWriter{t: t, prefix: name + " stderr: "}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &tsAgent{cmd: cmd, read: make(chan struct{})}
	logs.mu.Lock()
	if logs.procs == nil {
		logs.procs = map[string]*tsAgent{}
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
// (ce-source /examples/ts-agent) under "agent " + ce-type.
func (s *stack) rawEvents(ctx context.Context, t *testing.T, id string) map[string][]nats.Header {
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
		if m.Headers().Get("ce-source") == "/examples/ts-agent" {
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
