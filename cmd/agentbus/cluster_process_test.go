package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// serveNode is one `agentbus serve` process of a three-node cluster.
type serveNode struct {
	name             string
	args             []string
	p                *proc
	natsURL, httpURL string
}

// serveCluster is three `agentbus serve` processes whose embedded NATS
// servers form one JetStream cluster on loopback: nothing but the binary,
// as on three machines.
type serveCluster struct {
	nodes []*serveNode
}

// startServeCluster starts three serve processes routed to one another,
// with extra flags, and waits until each is ready.
func startServeCluster(t *testing.T, extra ...string) *serveCluster {
	t.Helper()
	c := &serveCluster{}
	var routes []string
	addrs := bustest.FreeAddrs(t, 6) // three route, three client addresses, all distinct
	routeAddrs, natsAddrs := addrs[:3], addrs[3:]
	for _, a := range routeAddrs {
		routes = append(routes, "nats://"+a)
	}
	for i := range 3 {
		c.nodes = append(c.nodes, newServeNode(t, i, natsAddrs[i], routeAddrs[i], routes, extra...))
	}
	c.start(t)
	return c
}

// newServeNode is node i (named n<i+1>) of a test cluster: its client and
// route listen addresses, the route URLs it dials, and extra flags.
func newServeNode(t *testing.T, i int, natsAddr, routeAddr string, routes []string, extra ...string) *serveNode {
	n := &serveNode{name: fmt.Sprintf("n%d", i+1)}
	n.args = append([]string{"serve", "--data", t.TempDir(), "--nats-addr", natsAddr, "--http-addr", "127.0.0.1:0",
		"--cluster-addr", routeAddr, "--routes", strings.Join(routes, ","), "--server-name", n.name,
		"--capabilities", "echo,sleep", "--sample-corpus=false", "--heartbeat", "200ms", "--ack-wait", "2s", "--step-hold", "20s", "--submit-bound", "10s"}, extra...)
	return n
}

// start starts every node and waits until each is ready.
func (c *serveCluster) start(t *testing.T) {
	t.Helper()
	for _, n := range c.nodes {
		n.p = startProc(t, n.args...)
	}
	for _, n := range c.nodes {
		m := n.p.waitLine(t, readyLine)
		n.natsURL, n.httpURL = m[1], m[2]
	}
}

// kill ends node i with SIGKILL: no flush, no goodbye.
func (c *serveCluster) kill(t *testing.T, i int) time.Time {
	t.Helper()
	n := c.nodes[i]
	if err := syscall.Kill(n.p.pid(), syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", n.name, err)
	}
	<-n.p.done
	n.httpURL = ""
	return time.Now()
}

// restart starts node i again on its data directory.
func (c *serveCluster) restart(t *testing.T, i int) {
	t.Helper()
	n := c.nodes[i]
	n.p = startProc(t, n.args...)
	m := n.p.waitLine(t, readyLine)
	n.natsURL, n.httpURL = m[1], m[2]
}

// live returns the HTTP URLs of the running nodes.
func (c *serveCluster) live() []string {
	var out []string
	for _, n := range c.nodes {
		if n.httpURL != "" {
			out = append(out, n.httpURL)
		}
	}
	return out
}

// index is the node named name.
func (c *serveCluster) index(t *testing.T, name string) int {
	for i, n := range c.nodes {
		if n.name == name {
			return i
		}
	}
	t.Fatalf("no node %q", name)
	return -1
}

// leader returns the name of the server that leads stream.
func (c *serveCluster) leader(t *testing.T, stream string) string {
	t.Helper()
	var urls []string
	for _, n := range c.nodes {
		if n.httpURL != "" {
			urls = append(urls, n.natsURL)
		}
	}
	return c.leaderOf(t, strings.Join(urls, ","), stream)
}

// leaderOf asks the servers at urls which one leads stream.
func (c *serveCluster) leaderOf(t *testing.T, urls, stream string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := bus.Connect(ctx, bus.Config{URL: urls, Name: "test-leader", Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var name string
	eventually(t, 20*time.Second, "stream "+stream+" has a leader", func() bool {
		s, err := b.JetStream().Stream(ctx, stream)
		if err == nil && s.CachedInfo().Cluster != nil {
			name = s.CachedInfo().Cluster.Leader
		}
		return name != ""
	})
	return name
}

// clusterPlan is workflow i's plan: a chain, a diamond or one sleep.
func clusterPlan(i int) string {
	switch i % 3 {
	case 0:
		return `{"steps":[{"id":"a","capability":"echo","input":{"n":1}},
			{"id":"b","capability":"sleep","input":{"ms":30},"depends_on":["a"]},
			{"id":"c","capability":"echo","input":{"n":3},"depends_on":["b"]}]}`
	case 1:
		return `{"steps":[{"id":"a","capability":"echo","input":{"n":1}},
			{"id":"b","capability":"sleep","input":{"ms":40},"depends_on":["a"]},
			{"id":"c","capability":"sleep","input":{"ms":20},"depends_on":["a"]},
			{"id":"d","capability":"echo","input":{"n":4},"depends_on":["b","c"]}]}`
	}
	return `{"steps":[{"id":"nap","capability":"sleep","input":{"ms":50}}]}`
}

// submitTo submits workflow id with plan i to the live gateways in turn,
// retrying (same id: a submission is stored once) while the cluster
// elects leaders, until an orchestrator accepted it.
func (c *serveCluster) submitTo(t *testing.T, id string, i int) {
	t.Helper()
	body := fmt.Sprintf(`{"workflow_id":%q,"plan":%s}`, id, clusterPlan(i))
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		live := c.live()
		url := live[(i+attempt)%len(live)]
		resp, err := http.Post(url+"/v1/workflows", "application/json", strings.NewReader(body))
		if err != nil {
			last = err.Error()
			continue
		}
		var sub gateway.SubmitResponse
		_ = json.NewDecoder(resp.Body).Decode(&sub)
		resp.Body.Close()
		if resp.StatusCode == http.StatusAccepted {
			return
		}
		last = resp.Status
		time.Sleep(100 * time.Millisecond) // a client's back-off between retries
	}
	t.Fatalf("submit %s: not accepted within 60s: %s", id, last)
}

// replay reads workflow id's whole event log from a live gateway.
func (c *serveCluster) replay(t *testing.T, id string) []events.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []events.Frame
	start, first := time.Now(), time.Duration(0)
	u := c.live()[0]
	defer func() {
		if d := time.Since(start); d > time.Second {
			t.Logf("replay %s from %s took %s, its first event after %s, %d events", id, u, d.Round(time.Millisecond), first.Round(time.Millisecond), len(out))
		}
	}()
	if _, err := newClient(u, "default").follow(ctx, id, 0, func(f events.Frame) error {
		if len(out) == 0 {
			first = time.Since(start)
		}
		out = append(out, f)
		return nil
	}); err != nil {
		// What the workflow's checkpoint says, and what was read of it,
		// tells a replay that stalled from a workflow that never ended.
		var state json.RawMessage
		getJSON(t, c.live()[0]+"/v1/workflows/"+id, &state)
		t.Fatalf("replay %s: %v after %v at %v; its state: %s; the streams: %s", id, err, types(out), offsets(out), state, c.stepsOf(t, id, state))
	}
	return out
}

// checkWorkflow checks a finished workflow: completed, every step
// completed exactly once, its log as long as the checkpoint's event count
// with strictly increasing offsets, and what a live follower saw equal to
// the log (when it saw anything).
func (c *serveCluster) checkWorkflow(t *testing.T, id string, seen []events.Frame) {
	t.Helper()
	log := c.replay(t, id)
	if len(log) == 0 || log[len(log)-1].Type != "complete" {
		var end json.RawMessage
		if len(log) > 0 {
			end = log[len(log)-1].Data
		}
		t.Errorf("%s did not complete: %v, ending %s", id, types(log), end)
		return
	}
	done := map[string]int{}
	distinct := map[string]bool{}
	agents := 0 // the sleep agent's own progress events, one per delivery
	for i, f := range log {
		if i > 0 && f.Offset <= log[i-1].Offset {
			t.Errorf("%s: offset %d after %d", id, f.Offset, log[i-1].Offset)
		}
		key := f.Type + "|" + f.StepID + "|" + string(f.Data)
		if distinct[key] {
			t.Errorf("%s: event stored twice: %s", id, key)
		}
		distinct[key] = true
		if f.Type == "progress" && strings.Contains(string(f.Data), `"message":"sleeping`) {
			agents++
		}
		var st events.Status
		if f.Type == "status" && f.StepID != "" && json.Unmarshal(f.Data, &st) == nil && st.State == events.StateCompleted {
			done[f.StepID]++
		}
	}
	for step, n := range done {
		if n != 1 {
			t.Errorf("%s: step %s recorded completed %d times", id, step, n)
		}
	}
	var state struct {
		EventCount int `json:"event_count"`
	}
	getJSON(t, c.live()[0]+"/v1/workflows/"+id, &state)
	if state.EventCount != len(log)-agents {
		t.Errorf("%s: the log holds %d orchestrator events, the checkpoint counted %d (a gap or a duplicate): %v at %v; read straight from the stream: %s",
			id, len(log)-agents, state.EventCount, types(log), offsets(log), c.storedEvents(t, id))
	}
	if seen != nil && fmt.Sprint(offsets(seen)) != fmt.Sprint(offsets(log)) {
		if len(seen) < len(log) && fmt.Sprint(offsets(seen)) == fmt.Sprint(offsets(log[:len(seen)])) {
			// No gap, no duplicate: the follower stopped receiving. When
			// the next event was stored says whether the workflow went on
			// while the follower waited. (Until bd50809 a hub whose event
			// stream failed left its streams waiting for good.)
			last, next := seen[len(seen)-1], log[len(seen)]
			t.Errorf("%s: a live follower stalled after offsets %v; the log is %v; its last frame (%s) is of %s, the next (%s) of %s, %s later",
				id, offsets(seen), offsets(log), last.Type, last.Time.Format(time.TimeOnly+".000"), next.Type, next.Time.Format(time.TimeOnly+".000"), next.Time.Sub(last.Time).Round(time.Millisecond))
			return
		}
		t.Errorf("%s: a live follower saw offsets %v, the log is %v", id, offsets(seen), offsets(log))
	}
}

// stepsOf says, for each working step of a workflow's state, whether its
// request is still stored in AGENTBUS_STEPS, what its capability's
// consumer holds, and what the workflow's timer subject holds: where a
// step that never ends is stuck.
func (c *serveCluster) stepsOf(t *testing.T, id string, state json.RawMessage) string {
	t.Helper()
	var st struct {
		Tasks map[string]struct {
			Capability string `json:"capability"`
			Status     string `json:"status"`
			StepSeq    uint64 `json:"step_seq"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(state, &st); err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := c.connect(ctx, t, "test-steps")
	if err != nil {
		return err.Error()
	}
	defer b.Close()
	js := b.JetStream()
	var out []string
	for sid, task := range st.Tasks {
		if task.Status != "working" {
			continue
		}
		line := fmt.Sprintf("step %s (seq %d):", sid, task.StepSeq)
		if str, err := js.Stream(ctx, subjects.StreamSteps); err == nil {
			m, err := str.GetMsg(ctx, task.StepSeq)
			if err != nil {
				line += fmt.Sprintf(" request: %v;", err)
			} else {
				line += fmt.Sprintf(" request stored on %s;", m.Subject)
			}
		}
		name, _ := subjects.StepConsumer(task.Capability)
		if cons, err := js.Consumer(ctx, subjects.StreamSteps, name); err != nil {
			line += fmt.Sprintf(" consumer %s: %v;", name, err)
		} else if ci, err := cons.Info(ctx); err == nil {
			line += fmt.Sprintf(" consumer %s: delivered %d, ack floor %d, pending %d, ack pending %d, redelivered %d, waiting %d, leader %v;",
				name, ci.Delivered.Stream, ci.AckFloor.Stream, ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting, ci.Cluster)
		}
		out = append(out, line)
	}
	timer, _ := subjects.Timer("default", id)
	if str, err := js.Stream(ctx, subjects.StreamTimers); err == nil {
		m, err := str.GetLastMsgForSubject(ctx, timer)
		if err != nil {
			out = append(out, fmt.Sprintf("timer: %v", err))
		} else {
			out = append(out, fmt.Sprintf("timer: seq %d, headers %v, data %s", m.Sequence, m.Header, m.Data))
		}
	}
	return strings.Join(out, " ")
}

// connect opens a NATS connection to the live nodes.
func (c *serveCluster) connect(ctx context.Context, t *testing.T, name string) (*bus.Bus, error) {
	var urls []string
	for _, n := range c.nodes {
		if n.httpURL != "" {
			urls = append(urls, n.natsURL)
		}
	}
	return bus.Connect(ctx, bus.Config{URL: strings.Join(urls, ","), Name: name, Logger: bustest.Logger(t)})
}

// storedEvents reads workflow id's events straight from the events stream
// (no gateway) and says how many there are and at which offsets: whether
// a short log is missing from the stream or only from what a gateway
// served.
func (c *serveCluster) storedEvents(t *testing.T, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := c.connect(ctx, t, "test-stored")
	if err != nil {
		return err.Error()
	}
	defer b.Close()
	var offs []string
	err = b.Follow(ctx, "default", id, 0, func(_ context.Context, r bus.Record) error {
		offs = append(offs, fmt.Sprintf("%d:%s", r.Offset, r.Envelope.Type.Short()))
		if r.Pending == 0 {
			return bus.ErrStop // everything stored, past the terminal event too
		}
		return nil
	})
	return fmt.Sprintf("%d events %v (err %v)", len(offs), offs, err)
}

func types(fs []events.Frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Type)
	}
	return out
}

func offsets(fs []events.Frame) []uint64 {
	var out []uint64
	for _, f := range fs {
		out = append(out, f.Offset)
	}
	return out
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// follower follows workflows through one gateway from offset 0 and keeps
// what each stream delivered and when it ended.
type follower struct {
	url  string
	mu   sync.Mutex
	seen map[string][]events.Frame
	end  map[string]time.Time
	wg   sync.WaitGroup
	errs []error
}

func newFollower(url string) *follower {
	return &follower{url: url, seen: map[string][]events.Frame{}, end: map[string]time.Time{}}
}

func (f *follower) follow(ctx context.Context, id string) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		cl := newClient(f.url, "default")
		cl.notFoundGrace = 30 * time.Second
		_, err := cl.follow(ctx, id, 0, func(fr events.Frame) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.seen[id] = append(f.seen[id], fr)
			if fr.Terminal() {
				f.end[id] = time.Now()
			}
			return nil
		})
		if err != nil {
			f.mu.Lock()
			f.errs = append(f.errs, fmt.Errorf("follow %s: %w", id, err))
			f.mu.Unlock()
		}
	}()
}

// firstEndAfter is the earliest end of a followed stream after at.
func (f *follower) firstEndAfter(at time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := time.Duration(-1)
	for _, e := range f.end {
		if d := e.Sub(at); d > 0 && (first < 0 || d < first) {
			first = d
		}
	}
	return first
}

// TestServeClusterSurvivesNodeLoss is the fault test on three serve
// processes forming one cluster with R3 streams: 100 workflows of chains,
// diamonds and sleeps while one node is killed with SIGKILL and later
// restarted on its store. Every workflow completes, every step once, every
// event log is whole, and followers on a surviving gateway see no gap.
func TestServeClusterSurvivesNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	// Every write flushed: a server killed before its periodic flush can
	// lose events it acknowledged (the README's durability section).
	c := startServeCluster(t, "--jetstream-sync", "always")
	fl := newFollower(c.nodes[0].httpURL)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const total = 100
	ids := make([]string, total)
	for i := range total {
		ids[i] = fmt.Sprintf("fault-%03d", i)
	}
	for i := range total / 2 {
		fl.follow(ctx, ids[i])
		c.submitTo(t, ids[i], i)
	}
	lost := c.kill(t, 2)
	for i := total / 2; i < total; i++ {
		fl.follow(ctx, ids[i])
		c.submitTo(t, ids[i], i)
	}
	c.restart(t, 2)
	fl.wg.Wait()
	t.Logf("followers done at %s", time.Now().Format(time.TimeOnly+".000"))
	stalled := false
	for _, err := range fl.errs {
		stalled = stalled || errors.Is(err, context.DeadlineExceeded)
		t.Error(err) // what it saw is checked below
	}
	for _, id := range ids {
		fl.mu.Lock()
		seen := fl.seen[id]
		fl.mu.Unlock()
		c.checkWorkflow(t, id, seen)
	}
	if stalled {
		c.dumpGoroutines(t, 0)
	}
	t.Logf("node lost: first workflow completed %s after the loss; all %d completed", fl.firstEndAfter(lost).Round(time.Millisecond), total)
}

// dumpGoroutines stops node i with SIGQUIT, which makes Go print every
// goroutine, and saves its output in a file the log names: what a
// stalled follower's gateway was doing.
func (c *serveCluster) dumpGoroutines(t *testing.T, i int) {
	p := c.nodes[i].p
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
	out := p.output()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "stalled") || strings.Contains(line, "hub failed") || strings.Contains(line, "slow consumer") || strings.Contains(line, "waiting for its reader") {
			t.Logf("node %d: %s", i+1, line)
		}
	}
	f, err := os.CreateTemp("", "agentbus-stall-*.txt")
	if err == nil {
		_, _ = f.WriteString(out)
		_ = f.Close()
		t.Logf("node %d's output and goroutines: %s", i+1, f.Name())
	}
}

// TestServeClusterSurvivesStreamLeaderLoss kills the server leading
// AGENTBUS_STEPS, then (after it is back) the one leading the checkpoints
// bucket, with workflows in flight each time.
func TestServeClusterSurvivesStreamLeaderLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	c := startServeCluster(t, "--jetstream-sync", "always")
	var ids []string
	n := 0
	wave := func(k int) {
		for range k {
			id := fmt.Sprintf("leader-%03d", n)
			c.submitTo(t, id, n)
			ids = append(ids, id)
			n++
		}
	}
	for _, stream := range []string{subjects.StreamSteps, "KV_" + subjects.BucketCheckpoints} {
		wave(15)
		victim := c.index(t, c.leader(t, stream))
		lost := c.kill(t, victim)
		wave(15)
		awaitCompleted(t, c, ids)
		t.Logf("leader of %s (%s) lost: all %d workflows completed within %s", stream, c.nodes[victim].name, len(ids), time.Since(lost).Round(time.Millisecond))
		c.restart(t, victim)
	}
	for _, id := range ids {
		c.checkWorkflow(t, id, nil)
	}
}

// awaitCompleted waits until every workflow in ids has completed.
func awaitCompleted(t *testing.T, c *serveCluster, ids []string) {
	t.Helper()
	for _, id := range ids {
		eventually(t, 90*time.Second, id+" completes", func() bool {
			var state struct {
				Status string `json:"status"`
			}
			resp, err := http.Get(c.live()[0] + "/v1/workflows/" + id)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if json.Unmarshal(body, &state) != nil {
				return false
			}
			if state.Status == "failed" || state.Status == "canceled" {
				t.Fatalf("%s ended %s:\n%s", id, state.Status, body)
			}
			return state.Status == "completed"
		})
	}
}

// TestUpdateStreamsScalesALiveCluster starts three serve processes with R1
// streams, puts workflows in flight, and has an orchestrator started with
// --replicas 3 --update-streams scale every stream and bucket in place:
// the in-flight workflows complete, the streams are R3, and new work runs
// on them. (Killing a server within seconds of the scale-up left
// AGENTBUS_WORKFLOWS without a leader for over a minute in one run; the
// node-loss tests start at R3.)
func TestUpdateStreamsScalesALiveCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	c := startServeCluster(t, "--replicas", "1")
	var urls []string
	for _, n := range c.nodes {
		urls = append(urls, n.natsURL)
	}
	all := strings.Join(urls, ",")
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("scale-%02d", i)
		c.submitTo(t, id, i)
		ids = append(ids, id)
	}
	// Without --update-streams a different count stops the process, naming it.
	refused := startProc(t, "orchestrator", "--nats", all, "--replicas", "3")
	<-refused.done
	if out := refused.output(); !strings.Contains(out, "AGENTBUS_STEPS has 1 replicas, want 3 (+2)") || !strings.Contains(out, "--update-streams") {
		t.Fatalf("orchestrator --replicas 3 over R1 streams:\n%s", out)
	}
	orch := startProc(t, "orchestrator", "--nats", all, "--replicas", "3", "--update-streams", "--log-level", "info")
	orch.waitLine(t, regexp.MustCompile(`msg="scaling in place"`))
	orch.waitLine(t, regexp.MustCompile(`msg="agentbus orchestrator ready"`))
	awaitCompleted(t, c, ids)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bus.Connect(ctx, bus.Config{URL: all, Name: "test-replicas", Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, name := range []string{subjects.StreamWorkflows, subjects.StreamSteps, subjects.StreamReplies, subjects.StreamEvents,
		"KV_" + subjects.BucketCheckpoints, "KV_" + subjects.BucketControl} {
		s, err := b.JetStream().Stream(ctx, name)
		if err != nil || s.CachedInfo().Config.Replicas != 3 {
			t.Fatalf("stream %s after --update-streams: %v, want 3 replicas", name, err)
		}
	}
	// New work on the scaled streams.
	for i := 20; i < 30; i++ {
		id := fmt.Sprintf("scale-%02d", i)
		c.submitTo(t, id, i)
		ids = append(ids, id)
	}
	awaitCompleted(t, c, ids)
	for _, id := range ids {
		c.checkWorkflow(t, id, nil)
	}
}
