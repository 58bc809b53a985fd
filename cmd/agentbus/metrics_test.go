package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/subjects"
)

// testAgent serves one capability with a handler.
type testAgent struct {
	capability string
	agents.HandlerFunc
}

func (a testAgent) Card() agents.Card {
	return agents.Card{Name: a.capability, Description: "test " + a.capability, Version: "1.0.0", Capabilities: []string{a.capability}}
}

// metricsStack is an orchestrator and a worker on one in-process server,
// each with its own registry served by the real --metrics-addr server, as
// two processes would be.
type metricsStack struct {
	env                *bustest.Env
	orchURL, workerURL string
	blocked            chan struct{}
}

func startMetricsStack(t *testing.T) *metricsStack {
	t.Helper()
	env := bustest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	s := &metricsStack{env: env, blocked: make(chan struct{}, 1)}
	om, err := newAppMetrics(true, false, true)
	if err != nil {
		t.Fatal(err)
	}
	wm, err := newAppMetrics(false, true, true)
	if err != nil {
		t.Fatal(err)
	}
	list := []agents.Agent{
		echo.Agent{},
		testAgent{"fail", func(context.Context, agents.Request, agents.Emitter) (json.RawMessage, error) {
			return nil, fmt.Errorf("bad input: %w", agents.ErrPermanent)
		}},
		testAgent{"flaky", func(context.Context, agents.Request, agents.Emitter) (json.RawMessage, error) {
			return nil, errors.New("upstream said no")
		}},
		testAgent{"block", func(ctx context.Context, _ agents.Request, _ agents.Emitter) (json.RawMessage, error) {
			s.blocked <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}},
	}
	// Spans recorded and dropped: the metrics' exemplars carry their trace ids.
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: list, Logger: log, Metrics: wm.workerMetrics(), TracerProvider: tp,
		MaxDeliver: 2, RetryBase: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: log, Metrics: om.orchestratorMetrics(), TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	oa, err := serveMetrics(ctx, "127.0.0.1:0", om, log)
	if err != nil {
		t.Fatal(err)
	}
	wa, err := serveMetrics(ctx, "127.0.0.1:0", wm, log)
	if err != nil {
		t.Fatal(err)
	}
	s.orchURL, s.workerURL = metricsURL(oa), metricsURL(wa)
	return s
}

// run submits a workflow and waits for its terminal event.
func (s *metricsStack) run(t *testing.T, tenant, workflow string, p *events.Plan, whileRunning func()) events.Envelope {
	t.Helper()
	subj, _ := subjects.Submit(tenant)
	env, err := events.New(events.TypeWorkflowSubmitted, events.SubmitKey(tenant, workflow), events.SourceGateway, tenant, workflow, "",
		events.WorkflowSubmitted{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.env.Bus.Publish(ctx, subj, env, events.SubmitKey(tenant, workflow)); err != nil {
		t.Fatal(err)
	}
	if whileRunning != nil {
		whileRunning()
	}
	var end events.Envelope
	err = s.env.Bus.Follow(ctx, tenant, workflow, 0, func(_ context.Context, r bus.Record) error {
		if r.Envelope.Type.Terminal() {
			end = r.Envelope
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("follow %s: %v", workflow, err)
	}
	return end
}

// cancelWorkflow publishes a cancel and waits for its answer.
func (s *metricsStack) cancelWorkflow(t *testing.T, tenant, workflow string) {
	t.Helper()
	subj, _ := subjects.Control(tenant, workflow)
	env, err := events.New(events.TypeControl, "ctl-"+workflow, "/test", tenant, workflow, "", events.Control{Action: events.ActionCancel, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.env.Bus.Request(ctx, subj, env); err != nil {
		t.Fatal(err)
	}
}

// withFallback gives p's first step a fallback capability.
func withFallback(p *events.Plan, capability string) *events.Plan {
	p.Steps[0].Fallback = capability
	return p
}

func chain(capabilities ...string) *events.Plan {
	p := &events.Plan{}
	for i, c := range capabilities {
		st := events.PlanStep{ID: fmt.Sprintf("s%d", i), Capability: c, Input: json.RawMessage(`"x"`)}
		if i > 0 {
			st.DependsOn = []string{p.Steps[i-1].ID}
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

// TestMetricsCountWorkflowsAndSteps runs a known set of workflows — two
// completed (three echo steps, two tenants), one completed by its
// fallback after a permanent error, one failed on a permanent error, one whose step is retried and dead-lettered, one canceled while
// its step runs — and reads both /metrics endpoints over HTTP: every
// counter has its exact value and the histograms counted every step.
func TestMetricsCountWorkflowsAndSteps(t *testing.T) {
	s := startMetricsStack(t)
	for _, c := range []struct {
		tenant, workflow string
		plan             *events.Plan
		want             events.Type
		while            func()
	}{
		{"default", "ok-chain", chain("echo", "echo"), events.TypeComplete, nil},
		{"acme", "ok-one", chain("echo"), events.TypeComplete, nil},
		{"default", "permanent", chain("fail"), events.TypeError, nil},
		{"acme", "fallback", withFallback(chain("fail"), "echo"), events.TypeComplete, nil},
		{"default", "dead-letter", chain("flaky"), events.TypeError, nil},
		{"default", "canceled", chain("block"), events.TypeCancelled, func() {
			select {
			case <-s.blocked:
			case <-time.After(20 * time.Second):
				t.Fatal("the block step never ran")
			}
			s.cancelWorkflow(t, "default", "canceled")
		}},
	} {
		if end := s.run(t, c.tenant, c.workflow, c.plan, c.while); end.Type != c.want {
			t.Fatalf("%s ended %s, want %s: %s", c.workflow, end.Type, c.want, end.Data)
		}
	}
	orch := map[string]float64{
		`agentbus_orchestrator_workflows_started_total{tenant="default"}`:                             4,
		`agentbus_orchestrator_workflows_started_total{tenant="acme"}`:                                2,
		`agentbus_orchestrator_workflows_finished_total{outcome="completed",tenant="default"}`:        1,
		`agentbus_orchestrator_workflows_finished_total{outcome="completed",tenant="acme"}`:           2,
		`agentbus_orchestrator_workflows_finished_total{outcome="failed",tenant="default"}`:           2,
		`agentbus_orchestrator_workflows_finished_total{outcome="canceled",tenant="default"}`:         1,
		`agentbus_orchestrator_workflow_duration_seconds_count{outcome="completed",tenant="default"}`: 1,
		`agentbus_orchestrator_workflow_duration_seconds_count{outcome="failed",tenant="default"}`:    2,
		`agentbus_orchestrator_workflow_duration_seconds_count{outcome="canceled",tenant="default"}`:  1,
		`agentbus_orchestrator_steps_finished_total{capability="echo",outcome="completed"}`:           4,
		`agentbus_orchestrator_steps_finished_total{capability="fail",outcome="failed"}`:              1,
		`agentbus_orchestrator_steps_finished_total{capability="flaky",outcome="failed"}`:             1,
		`agentbus_orchestrator_step_queue_seconds_count{capability="echo"}`:                           4,
		`agentbus_orchestrator_step_run_seconds_count{capability="echo",outcome="completed"}`:         4,
		`agentbus_orchestrator_phase_seconds_count{phase="end_to_end"}`:                               3,
		`agentbus_orchestrator_phase_seconds_count{phase="planning"}`:                                 3,
		`agentbus_orchestrator_step_fallbacks_total{capability="fail"}`:                               1,
		`agentbus_orchestrator_planner_fallbacks_total`:                                               0,
		`agentbus_registry_instances{health="healthy"}`:                                               4,
	}
	worker := map[string]float64{
		`agentbus_worker_step_duration_seconds_count{capability="echo",outcome="completed"}`: 4,
		`agentbus_worker_step_duration_seconds_count{capability="fail",outcome="failed"}`:    2,
		`agentbus_worker_step_duration_seconds_count{capability="flaky",outcome="retried"}`:  1,
		`agentbus_worker_step_duration_seconds_count{capability="flaky",outcome="failed"}`:   1,
		`agentbus_worker_step_duration_seconds_count{capability="block",outcome="canceled"}`: 1,
		`agentbus_worker_queue_wait_seconds_count{capability="echo"}`:                        4,
		`agentbus_worker_queue_wait_seconds_count{capability="fail"}`:                        2,
		`agentbus_worker_queue_wait_seconds_count{capability="flaky"}`:                       1,
		`agentbus_worker_queue_wait_seconds_count{capability="block"}`:                       1,
		`agentbus_worker_redeliveries_total{capability="flaky"}`:                             1,
		`agentbus_worker_redeliveries_total{capability="echo"}`:                              0,
		`agentbus_worker_retries_total{capability="flaky"}`:                                  1,
		`agentbus_worker_dead_letters_total{capability="flaky"}`:                             1,
		`agentbus_worker_dead_letters_total{capability="fail"}`:                              2,
		`agentbus_worker_dead_letters_total{capability="echo"}`:                              0,
		`agentbus_worker_steps_in_flight{capability="block"}`:                                0,
	}
	// The canceled step's run ends on the worker after the workflow's
	// cancelled event: wait for it, with a deadline.
	for _, c := range []struct {
		url  string
		want map[string]float64
	}{{s.orchURL, orch}, {s.workerURL, worker}} {
		var got map[string]float64
		deadline := time.Now().Add(20 * time.Second)
		for {
			got = scrape(t, c.url)
			if diff := compareSeries(got, c.want); diff == "" {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("%s:%s", c.url, diff)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// No step was lost, so the watchdog dispatched nothing again (a
	// fallback's dispatch is not one).
	for k, v := range scrape(t, s.orchURL) {
		if strings.HasPrefix(k, "agentbus_orchestrator_step_redispatches_total") && v != 0 {
			t.Errorf("%s = %v, want none", k, v)
		}
	}
	// Each step observed once in the histograms: the buckets' top count is
	// the count.
	got := scrape(t, s.workerURL)
	if inf := got[`agentbus_worker_step_duration_seconds_bucket{capability="echo",outcome="completed",le="+Inf"}`]; inf != 4 {
		t.Errorf("echo step histogram +Inf bucket %v, want 4", inf)
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("no go_* runtime metrics on the worker's /metrics")
	}
	// Asked for OpenMetrics, the histograms show exemplars with trace ids.
	for url, metric := range map[string]string{s.workerURL: "agentbus_worker_step_duration_seconds_bucket", s.orchURL: "agentbus_orchestrator_step_run_seconds_bucket"} {
		if !hasExemplar(t, url, metric) {
			t.Errorf("%s: no %s line with a trace_id exemplar", url, metric)
		}
	}
	// The step backlog, when the bus can read it (bus.ConsumerBacklog):
	// nothing is left waiting.
	if _, ok := any(s.env.Bus).(interface {
		ConsumerBacklog(ctx context.Context, stream, durable string) (uint64, uint64, error)
	}); ok {
		if diff := compareSeries(got, map[string]float64{
			`agentbus_worker_step_backlog{capability="echo",state="pending"}`:     0,
			`agentbus_worker_step_backlog{capability="echo",state="ack_pending"}`: 0,
		}); diff != "" {
			t.Errorf("backlog:%s", diff)
		}
	}
}

// hasExemplar reports whether url, scraped as OpenMetrics, has a line of
// metric with a trace_id exemplar.
func hasExemplar(t *testing.T, url, metric string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, metric) && strings.Contains(l, `# {trace_id="`) {
			return true
		}
	}
	return false
}

// scrape reads a /metrics page in the Prometheus text format into series
// → value, each series named as the page prints it.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// compareSeries lists the series of want whose value differs in got
// (labels compared in any order), or "".
func compareSeries(got, want map[string]float64) string {
	norm := map[string]float64{}
	for k, v := range got {
		norm[canonical(k)] = v
	}
	var diffs []string
	for k, v := range want {
		if g, ok := norm[canonical(k)]; !ok || g != v {
			diffs = append(diffs, fmt.Sprintf("\n  %s = %v (present %v), want %v", k, g, ok, v))
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "")
}

// canonical sorts a series' labels.
func canonical(series string) string {
	i := strings.IndexByte(series, '{')
	if i < 0 {
		return series
	}
	labels := strings.Split(strings.TrimSuffix(series[i+1:], "}"), ",")
	sort.Strings(labels)
	return series[:i] + "{" + strings.Join(labels, ",") + "}"
}

// TestServePhaseLatencyAndMetrics runs a three-step chain on an in-process
// serve: GET /v1/workflows/{id} carries the phase latency and each task's
// wait and run, and serve's one /metrics page holds the gateway's, the
// orchestrator's and the workers' metrics.
func TestServePhaseLatencyAndMetrics(t *testing.T) {
	s := startServe(t, t.TempDir())
	base := s.info.HTTPURL
	body := `{"plan":{"steps":[{"id":"a","capability":"echo","input":"x"},{"id":"b","capability":"echo","input":"x","depends_on":["a"]},{"id":"c","capability":"echo","input":"x","depends_on":["b"]}]}}`
	resp, err := http.Post(base+"/v1/workflows", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var sub struct {
		WorkflowID string `json:"workflow_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&sub)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %s %v", resp.Status, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	end, err := newClient(base, "default").follow(ctx, sub.WorkflowID, 0, func(events.Frame) error { return nil })
	if err != nil || end.Type != events.TypeComplete.Short() {
		t.Fatalf("workflow ended %q: %v", end.Type, err)
	}
	resp, err = http.Get(base + "/v1/workflows/" + sub.WorkflowID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var state struct {
		events.PhaseLatency
		Tasks map[string]struct {
			QueuedMS *float64 `json:"queued_ms"`
			RunMS    *float64 `json:"run_ms"`
		} `json:"tasks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&state); err != nil {
		t.Fatal(err)
	}
	l := state.PhaseLatency
	if l.EndToEndMS <= 0 || l.ActionMS <= 0 || l.PlanningMS+l.ActionMS > l.EndToEndMS+1 || l.QueueMaxMS > l.QueueMS {
		t.Errorf("state's phase latency %+v is not sane", l)
	}
	for id, task := range state.Tasks {
		if task.QueuedMS == nil || task.RunMS == nil || *task.QueuedMS+*task.RunMS > l.ActionMS+1 {
			t.Errorf("task %s: queued_ms %v run_ms %v (action %v)", id, task.QueuedMS, task.RunMS, l.ActionMS)
		}
	}
	t.Logf("3 echo steps on serve: planning %.3f ms, queue %.3f ms (max %.3f), action %.3f ms, end to end %.3f ms",
		l.PlanningMS, l.QueueMS, l.QueueMaxMS, l.ActionMS, l.EndToEndMS)
	if diff := compareSeries(scrape(t, base+"/metrics"), map[string]float64{
		`agentbus_orchestrator_workflows_finished_total{outcome="completed",tenant="default"}`: 1,
		`agentbus_worker_step_duration_seconds_count{capability="echo",outcome="completed"}`:   3,
		`agentbus_gateway_replays_total{kind="ws"}`:                                            0,
	}); diff != "" {
		t.Errorf("serve /metrics:%s", diff)
	}
}

// fakeBackend answers searches of its one profile.
type fakeBackend struct{ retrieval.Backend }

func (fakeBackend) Profiles() []string { return []string{"bm25"} }
func (fakeBackend) Search(_ context.Context, _, profile string, _ retrieval.Query) ([]retrieval.Hit, error) {
	if profile != "bm25" {
		return nil, errors.New("no such profile")
	}
	return nil, nil
}

// TestSearchLatencyByProfile checks the timed backend: one series per
// offered profile and outcome, and "unknown" for any other name, so a
// step's input cannot grow the label set.
func TestSearchLatencyByProfile(t *testing.T) {
	m, err := newAppMetrics(false, true, false)
	if err != nil {
		t.Fatal(err)
	}
	open := m.searchBackend(func() (retrieval.Backend, error) { return fakeBackend{}, nil })
	b, err := open()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"bm25", "bm25", "made-up-1", "made-up-2"} {
		_, _ = b.Search(t.Context(), "default", p, retrieval.Query{Text: "q"})
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "agentbus_search_duration_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			got[strings.Join(labels, ",")] = s.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{"outcome=ok,profile=bm25": 2, "outcome=error,profile=unknown": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("search histogram series %v, want %v", got, want)
	}
}
