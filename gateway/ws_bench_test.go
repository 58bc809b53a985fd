package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// BenchmarkWSReplay replays 100,000 stored events of one workflow over one
// WebSocket, beside a raw nats.go ordered consumer reading the same events
// from the same server in the same run. It reports both rates, their ratio
// (goal ≥ 0.5) and the WebSocket's time to first event (dial included).
//
//	go test -run '^$' -bench BenchmarkWSReplay -benchtime 3x ./gateway
func BenchmarkWSReplay(b *testing.B) {
	const n = 100_000
	env := bustest.New(b)
	s := startGateway(b, env)
	bareWorkflow(b, env, "replay", "completed")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	subj, _ := subjects.Events(gateway.DefaultTenant, "replay")
	for i := 0; i < n; i += 1000 {
		batch := make([]bus.Pending, 0, 1000)
		for j := i; j < i+1000; j++ {
			id := events.EventKey(gateway.DefaultTenant, "replay", j)
			var e events.Envelope
			var err error
			if j == n-1 {
				e, err = events.New(events.TypeComplete, id, events.SourceOrchestrator, gateway.DefaultTenant, "replay", "",
					events.Complete{Result: json.RawMessage(`"done"`), Outputs: map[string]json.RawMessage{}})
			} else {
				e, err = events.New(events.TypeProgress, id, events.SourceOrchestrator, gateway.DefaultTenant, "replay", "",
					events.Progress{CompletedSteps: j, TotalSteps: n, Percent: float64(j) / n * 100, Message: "step done"})
			}
			if err != nil {
				b.Fatal(err)
			}
			batch = append(batch, bus.Pending{Subject: subj, Env: e, MsgID: id})
		}
		if err := env.Bus.PublishBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}

	var rawTotal, wsTotal, ttfeTotal time.Duration
	for b.Loop() {
		// Raw: an ordered consumer filtered to the workflow, counting messages.
		start := time.Now()
		cons, err := env.Bus.JetStream().OrderedConsumer(ctx, subjects.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}})
		if err != nil {
			b.Fatal(err)
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(256))
		if err != nil {
			b.Fatal(err)
		}
		for range n {
			if _, err := it.Next(); err != nil {
				b.Fatal(err)
			}
		}
		it.Stop()
		rawTotal += time.Since(start)

		// WebSocket: dial, then read frames to the normal close.
		start = time.Now()
		c, _, err := s.dialWS(ctx, "/v1/workflows/replay/ws")
		if err != nil {
			b.Fatal(err)
		}
		frames := 0
		for {
			_, r, err := c.Reader(ctx)
			if err == nil {
				_, err = io.Copy(io.Discard, r)
			}
			if err != nil {
				if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
					b.Fatalf("after %d frames: %v", frames, err)
				}
				break
			}
			if frames++; frames == 2 { // after connected
				ttfeTotal += time.Since(start)
			}
		}
		wsTotal += time.Since(start)
		if frames != n+1 {
			b.Fatalf("%d frames, want connected + %d", frames, n)
		}
	}
	rounds := float64(b.N)
	rawRate := n * rounds / rawTotal.Seconds()
	wsRate := n * rounds / wsTotal.Seconds()
	b.ReportMetric(wsRate, "ws_events/s")
	b.ReportMetric(rawRate, "raw_events/s")
	b.ReportMetric(wsRate/rawRate, "ws/raw")
	b.ReportMetric(float64(ttfeTotal.Microseconds())/rounds/1000, "ttfe_ms")
}

// fanoutEnv names the environment that turns TestWSFanoutClients into the
// client process of BenchmarkWSFanout: "URL COUNT".
const fanoutEnv = "AGENTBUS_WS_FANOUT"

// BenchmarkWSFanout holds N WebSocket subscribers on one workflow while it
// emits R events/s for 3 s, and reports the delivery latency (event time →
// receipt by the client) p50/p99/max, the deliveries per second achieved and
// the resident memory per idle connection. subs=1000/rate=500 is the goal
// case (p99 ≤ 100 ms, ≤ 64 KiB per idle connection); the others show where
// the machine's capacity lies.
//
// Method: the subscribers run in a child process (this test binary running
// TestWSFanoutClients) so that the memory figure is the server side's
// alone: the gateway and its NATS server run in this process. Once every
// connection is open and idle (each has received `connected`): two GCs,
// then (HeapInuse + StackInuse) minus the same figure before they
// connected, divided by N. That is everything a subscriber costs the
// server: its goroutines, the WebSocket and its buffers, and its ordered
// consumer on both the NATS client and the (in-process) NATS server side.
// Latency compares the event's time, stamped just before it is published,
// with the child's clock at receipt (same host).
//
//	go test -run '^$' -bench BenchmarkWSFanout -benchtime 1x ./gateway
//
// With AGENTBUS_BENCH_WS_MANY=1 it also runs the many-workflows case
// (not in make bench: it takes about a minute and 20,000 sockets):
// subs=10000/workflows=100/rate=50, ten thousand subscribers, a hundred
// on each of 100 workflows, which together emit 50 events/s for 10 s.
// It raises the open-file limit to its hard limit first; the server
// process holds 10,000 sockets and so does the client process.
//
//	AGENTBUS_BENCH_WS_MANY=1 go test -run '^$' -bench 'WSFanout/subs=10000' -benchtime 1x -timeout 30m ./gateway
func BenchmarkWSFanout(b *testing.B) {
	for _, c := range []struct {
		conns, rate int
		delay       time.Duration
	}{{1000, 500, 0}, {1000, 500, 10 * time.Millisecond}, {1000, 50, 0}, {100, 500, 0}} {
		b.Run(fmt.Sprintf("subs=%d/rate=%d/write_delay=%s", c.conns, c.rate, c.delay), func(b *testing.B) {
			for b.Loop() {
				fanout(b, c.conns, 1, c.rate, 3, c.delay)
			}
		})
	}
	b.Run("subs=10000/workflows=100/rate=50", func(b *testing.B) {
		if os.Getenv(fanoutManyEnv) == "" {
			b.Skipf("set %s=1 to run it", fanoutManyEnv)
		}
		raiseFileLimit(b)
		for b.Loop() {
			fanout(b, 10_000, 100, 50, 10, 0)
		}
	})
}

// fanoutManyEnv turns on BenchmarkWSFanout's case of 10,000 subscribers.
const fanoutManyEnv = "AGENTBUS_BENCH_WS_MANY"

// fanoutWorkflow is the i-th of the benchmark's workflows: subscriber c
// follows fanoutWorkflow(c % workflows), and so does event e.
func fanoutWorkflow(workflows, i int) string {
	if workflows == 1 {
		return "fanout"
	}
	return fmt.Sprintf("fanout-%d", i%workflows)
}

// fanout runs one round of BenchmarkWSFanout: conns subscribers spread
// over workflows workflows (subscriber c follows workflow c % workflows),
// which together emit rate events/s for seconds, event i on workflow
// i % workflows, the last one of each workflow its terminal event.
func fanout(b *testing.B, conns, workflows, rate, seconds int, delay time.Duration) {
	env := bustest.New(b)
	s := startGateway(b, env, func(c *gateway.Config) { c.WS.WriteDelay = delay })
	for w := range workflows {
		bareWorkflow(b, env, fanoutWorkflow(workflows, w), "working")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	before, stack0, g0, rss0 := inUse(), stackInUse(), runtime.NumGoroutine(), rss()
	start := time.Now()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWSFanoutClients$", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", fanoutEnv, "ws"+strings.TrimPrefix(s.base, "http")+"/v1/workflows/", conns, workflows))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !waitLine(lines, "ready") {
		b.Fatalf("client process: no ready line: %v", cmd.Wait())
	}
	connected := time.Since(start)
	perConn := float64(inUse()-before) / float64(conns)
	rssPerConn := float64(rss()-rss0) / float64(conns)
	if rssPerConn < 0 {
		b.Errorf("the resident set shrank by %.1f KiB a connection while %d connections were made", -rssPerConn/1024, conns)
	}
	stackPerConn := float64(stackInUse()-stack0) / float64(conns)
	goroutines := float64(runtime.NumGoroutine()-g0) / float64(conns)

	// The offered load is exactly rate events/s: each publish runs on its
	// own (acks may lag under load), on the publisher's own connection, as
	// an orchestrator's would be. The terminal event goes last.
	pub := &bustest.Env{Bus: bustest.Connect(b, env), URL: env.URL}
	n := rate * seconds
	var wg sync.WaitGroup
	errs := make(chan error, n)
	// The last events are the workflows' terminal ones, each published
	// once every earlier one of its workflow is stored (it must be the
	// workflow's last): on schedule, as a publisher's acks come well
	// within the ticks a workflow's events are apart.
	last := make([]sync.WaitGroup, workflows)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	start = time.Now()
	for i := range n {
		<-tick.C
		w, final := i%workflows, i >= n-workflows
		if final {
			last[w].Wait()
		}
		last[w].Add(1)
		wg.Go(func() {
			defer last[w].Done()
			if _, err := publishEvent(ctx, pub, fanoutWorkflow(workflows, w), i/workflows, final, 0); err != nil {
				errs <- err
			}
		})
	}
	tick.Stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var res fanoutResult
	for lines.Scan() {
		if json.Unmarshal(lines.Bytes(), &res) == nil && res.Frames > 0 {
			break
		}
	}
	elapsed := time.Since(start)
	// Workflow w emitted every event i < n with i % workflows == w (its
	// last the terminal one) to each of its subscribers, every c with
	// c % workflows == w.
	want := 0
	for c := range conns {
		want += (n - c%workflows + workflows - 1) / workflows
	}
	if err := cmd.Wait(); err != nil || res.Frames != want {
		b.Fatalf("client process: %v; result %+v, want %d frames", err, res, want)
	}
	b.ReportMetric(res.P50MS, "p50_ms")
	b.ReportMetric(res.P99MS, "p99_ms")
	b.ReportMetric(res.MaxMS, "max_ms")
	b.ReportMetric(perConn/1024, "KiB/idle_conn")
	b.ReportMetric(rssPerConn/1024, "rss_KiB/idle_conn")
	b.ReportMetric(stackPerConn/1024, "stack_KiB/idle_conn")
	b.ReportMetric(goroutines, "goroutines/conn")
	b.ReportMetric(float64(res.Frames)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(connected.Seconds(), "connect_all_s")

	// The handlers outlive their sockets briefly (each deletes its
	// consumer); let them finish before the server stops under them.
	for {
		str, err := env.Bus.JetStream().Stream(ctx, subjects.StreamEvents)
		if err != nil {
			b.Fatal(err)
		}
		if str.CachedInfo().State.Consumers == 0 {
			break
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%d consumers left behind", str.CachedInfo().State.Consumers)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// inUse is the process's heap and stack in use after a full collection.
func inUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// rss is the process's resident set in bytes (Linux; 0 elsewhere), once
// the runtime has returned every free page it can to the system. Beside
// the heap it counts what the runtime holds outside it. Without the
// return, pages freed before a phase went back to the system during it,
// at the scavenger's pace, and the growth over 1,000 connections came out
// negative (−50 to −63 KiB a connection, every run).
func rss() int64 {
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return resident * int64(os.Getpagesize())
}

// stackInUse is the process's goroutine stacks in use.
func stackInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.StackInuse)
}

func waitLine(sc *bufio.Scanner, want string) bool {
	for sc.Scan() {
		if sc.Text() == want {
			return true
		}
	}
	return false
}

// fanoutResult is the client process's report, one JSON line.
type fanoutResult struct {
	Frames int     `json:"frames"`
	P50MS  float64 `json:"p50_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// TestWSFanoutClients is BenchmarkWSFanout's client process (its clients
// are minimal WebSocket readers, rawWS, so that the client side costs the
// shared machine as little as it can); without its
// environment it does nothing. It opens the connections, prints "ready"
// once every one has its connected frame, reads every event to the
// terminal one, and prints a fanoutResult.
func TestWSFanoutClients(t *testing.T) {
	spec := os.Getenv(fanoutEnv)
	if spec == "" {
		t.Skip("the client process of BenchmarkWSFanout")
	}
	var base string
	var n, workflows int
	if _, err := fmt.Sscan(spec, &base, &n, &workflows); err != nil {
		t.Fatal(err)
	}
	raiseFileLimit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var ready, done sync.WaitGroup
	var mu sync.Mutex
	var lat []time.Duration
	dialing := make(chan struct{}, 64)
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			dialing <- struct{}{}
			c, err := dialRawWS(ctx, base+fanoutWorkflow(workflows, i)+"/ws")
			<-dialing
			if err == nil {
				_, err = c.next() // connected
			}
			ready.Done()
			if err != nil {
				t.Error(err)
				return
			}
			defer c.close()
			mine := make([]time.Duration, 0, 2048)
			for {
				b, err := c.next()
				if err != nil {
					if err != io.EOF {
						t.Error(err)
					}
					break
				}
				now := time.Now()
				// The event's time, without decoding the whole frame.
				at, ok := frameTime(b)
				if !ok {
					t.Errorf("frame %s: no time", b)
					break
				}
				mine = append(mine, now.Sub(at))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	ready.Wait()
	fmt.Println("ready")
	done.Wait()
	slices.Sort(lat)
	ms := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	r, _ := json.Marshal(fanoutResult{Frames: len(lat), P50MS: ms(0.50), P99MS: ms(0.99), MaxMS: ms(1)})
	fmt.Println(string(r))
}

// frameTime finds a frame's time without decoding the whole frame.
func frameTime(b []byte) (time.Time, bool) {
	i := bytes.Index(b, []byte(`"time":"`))
	if i < 0 {
		return time.Time{}, false
	}
	b = b[i+len(`"time":"`):]
	j := bytes.IndexByte(b, '"')
	if j < 0 {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, string(b[:j]))
	return at, err == nil
}
