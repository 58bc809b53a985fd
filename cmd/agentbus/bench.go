package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/api"
	sdk "github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// benchFlags are agentbus bench's settings.
type benchFlags struct {
	url, nats, tenant, token string
	shape, work, follow      string
	steps, sleepMS           int
	concurrency, count       int
	rate                     float64
	duration, timeout        time.Duration
	idPrefix                 string
	json                     bool
}

func newBench() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Load a deployment with workflows and report throughput and latency percentiles",
		Long: "Submit workflows of one shape to a deployment — a gateway (--url) or NATS (--nats) — keeping\n" +
			"--concurrency of them in flight, optionally at most --rate a second, until --count were started or\n" +
			"--duration has passed; then print steps/s, workflows/s and end-to-end and per-step latency\n" +
			"percentiles (HDR histograms). Every workflow it started is checked: completed, with each step's\n" +
			"output once.\n\n" +
			"Shapes: chain (--steps steps one after the other), fanout (--steps independent steps at once),\n" +
			"diamond (a → b, c → d: 4 steps). Step work: echo, or sleep --sleep-ms.\n\n" +
			"Exit status: 0 every workflow completed, 1 some failed or did not complete within --timeout\n" +
			"(each is named), 3 usage or connection error.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("url") && cmd.Flags().Changed("nats") {
				return &exitError{code: exitUsage, msg: "give --url (a gateway) or --nats (NATS straight), not both"}
			}
			if f.idPrefix == "" {
				f.idPrefix = randomPrefix()
			}
			if err := f.validate(); err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			return runBench(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "http://127.0.0.1:8080", "agentbus gateway URL")
	fl.StringVar(&f.nats, "nats", "", "talk to NATS straight at this URL (credentials as nats://user:password@host:port) instead of a gateway")
	fl.StringVar(&f.tenant, "tenant", api.DefaultTenant, "tenant id")
	fl.StringVar(&f.token, "token", "", "bearer token (when the gateway has auth on); also AGENTBUS_TOKEN")
	fl.StringVar(&f.shape, "shape", "chain", "workflow shape: chain, fanout or diamond")
	fl.IntVar(&f.steps, "steps", 4, "steps of a chain or of a fan-out (diamond has 4)")
	fl.StringVar(&f.work, "work", "echo", "step work: echo, or sleep (--sleep-ms)")
	fl.IntVar(&f.sleepMS, "sleep-ms", 10, "how long each sleep step sleeps")
	fl.IntVar(&f.concurrency, "concurrency", 16, "workflows in flight at most")
	fl.Float64Var(&f.rate, "rate", 0, "start at most this many workflows a second (0: as fast as --concurrency allows)")
	fl.IntVar(&f.count, "count", 0, "start this many workflows (default 1000 when --duration is not given either)")
	fl.DurationVar(&f.duration, "duration", 0, "start workflows for this long")
	fl.DurationVar(&f.timeout, "timeout", 60*time.Second, "a workflow not complete this long after its submission counts as lost")
	fl.StringVar(&f.idPrefix, "id-prefix", "", "workflow ids are PREFIX-0, PREFIX-1, … (default bench-<random>)")
	fl.StringVar(&f.follow, "follow", "tenant", "how to learn that workflows ended: tenant (one feed of the tenant's events) or workflow (one follower each)")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	return cmd
}

// Shapes, step work and ways to follow that bench knows.
var (
	benchShapes  = []string{"chain", "fanout", "diamond"}
	benchWork    = []string{"echo", "sleep"}
	benchFollows = []string{"tenant", "workflow"}
)

// validate reports every bad flag, each by name.
func (f *benchFlags) validate() error {
	var errs []error
	oneOf := func(flag, v string, want []string) {
		for _, w := range want {
			if v == w {
				return
			}
		}
		errs = append(errs, fmt.Errorf("--%s %q: want %s", flag, v, strings.Join(want, ", ")))
	}
	oneOf("shape", f.shape, benchShapes)
	oneOf("work", f.work, benchWork)
	oneOf("follow", f.follow, benchFollows)
	if f.shape != "diamond" && (f.steps < 1 || f.steps > 1000) {
		errs = append(errs, fmt.Errorf("--steps %d: want 1 to 1000", f.steps))
	}
	if f.sleepMS < 0 {
		errs = append(errs, fmt.Errorf("--sleep-ms %d: want 0 or more", f.sleepMS))
	}
	if f.concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency %d: want 1 or more", f.concurrency))
	}
	if f.rate < 0 {
		errs = append(errs, fmt.Errorf("--rate %g: want 0 (no limit) or more", f.rate))
	}
	if f.count < 0 {
		errs = append(errs, fmt.Errorf("--count %d: want 0 or more", f.count))
	}
	if f.duration < 0 {
		errs = append(errs, fmt.Errorf("--duration %s: want 0 or more", f.duration))
	}
	if f.count == 0 && f.duration == 0 {
		f.count = 1000
	}
	if f.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: want a positive duration", f.timeout))
	}
	if err := subjects.ValidWorkflow(f.idPrefix + "-1000000000"); err != nil {
		errs = append(errs, fmt.Errorf("--id-prefix %q: want lowercase letters, digits, - and _, starting with a letter or digit, at most 52 characters", f.idPrefix))
	}
	if err := subjects.ValidTenant(f.tenant); err != nil {
		errs = append(errs, fmt.Errorf("--tenant %q: want a tenant id matching %s", f.tenant, subjects.TokenPattern))
	}
	return errors.Join(errs...)
}

// randomPrefix is a default --id-prefix: runs never share workflow ids.
func randomPrefix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "bench-" + hex.EncodeToString(b)
}

// plan is the workflows' plan: the shape, each step doing the work.
func (f benchFlags) plan() events.Plan {
	capability, input := "echo", json.RawMessage(`{"bench":true}`)
	if f.work == "sleep" {
		capability, input = "sleep", json.RawMessage(fmt.Sprintf(`{"ms":%d}`, f.sleepMS))
	}
	step := func(id string, deps ...string) events.PlanStep {
		return events.PlanStep{ID: id, Capability: capability, Input: input, DependsOn: deps}
	}
	var p events.Plan
	switch f.shape {
	case "diamond":
		p.Steps = []events.PlanStep{step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")}
	case "fanout":
		for i := range f.steps {
			p.Steps = append(p.Steps, step(fmt.Sprintf("s%d", i+1)))
		}
	default:
		for i := range f.steps {
			if i == 0 {
				p.Steps = append(p.Steps, step("s1"))
				continue
			}
			p.Steps = append(p.Steps, step(fmt.Sprintf("s%d", i+1), fmt.Sprintf("s%d", i)))
		}
	}
	return p
}

// benchOutcome is how one workflow ended, as its follower learnt it.
type benchOutcome struct {
	// at is when bench learnt it: the end of the workflow's end to end.
	at time.Time
	// state is completed, failed, canceled or rejected; message says why
	// when not completed.
	state   events.State
	message string
	// outputs are the steps with an output; steps their latencies.
	outputs map[string]bool
	steps   map[string]stepTime
	// retried counts steps of more than one attempt (when known).
	retried int
	// fromState says the follower saw only the end: the steps are in the
	// workflow's state.
	fromState bool
}

// benchFollower tells bench how each workflow it started ended. Safe for
// concurrent use.
type benchFollower interface {
	// expect is called before a workflow is submitted; its outcome comes
	// on the channel (buffered: never read is fine).
	expect(id string) <-chan benchOutcome
	// submitted is called once the workflow was accepted.
	submitted(ctx context.Context, id string)
	// forget drops a workflow bench stopped waiting for.
	forget(id string)
}

// benchTarget is where bench submits and how it follows.
type benchTarget struct {
	c        *sdk.Client
	follower benchFollower
	close    func()
}

// runBench runs the load, checks every workflow and prints the report.
func runBench(cmd *cobra.Command, f benchFlags) error {
	ctx := cmd.Context()
	t, err := f.connect(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	plan := f.plan()
	rep := &benchReport{Tenant: f.tenant, Follow: f.follow, Shape: f.shape, Steps: len(plan.Steps), Work: f.work,
		Concurrency: f.concurrency, Rate: f.rate, IDPrefix: f.idPrefix, Transport: "http", Target: f.url}
	if f.nats != "" {
		rep.Transport, rep.Target = "nats", f.nats
	}
	if f.work == "sleep" {
		rep.SleepMS = f.sleepMS
	}
	lat := newLatencies()
	var (
		mu       sync.Mutex
		lastDone time.Time
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, f.concurrency)
	start := time.Now()
	var stopAt time.Time
	if f.duration > 0 {
		stopAt = start.Add(f.duration)
	}
	record := func(id string, t0 time.Time, o benchOutcome, problem string) {
		mu.Lock()
		defer mu.Unlock()
		if problem != "" {
			if strings.HasPrefix(problem, "submit: ") && rep.StoppedEarly == "" {
				rep.StoppedEarly = "a submission failed (" + id + ")"
			}
			rep.Problems = append(rep.Problems, benchProblem{WorkflowID: id, Problem: problem})
			return
		}
		lat.record(o.at.Sub(t0), planTimes(plan, o))
		rep.Completed++
		rep.StepsCompleted += len(plan.Steps)
		rep.Retried += o.retried
		if o.at.After(lastDone) {
			lastDone = o.at
		}
	}
	stopped := func() bool { mu.Lock(); defer mu.Unlock(); return rep.StoppedEarly != "" }
	for i := 0; ctx.Err() == nil && !stopped(); i++ {
		if (f.count > 0 && i >= f.count) || (!stopAt.IsZero() && !time.Now().Before(stopAt)) {
			break
		}
		if f.rate > 0 {
			next := start.Add(time.Duration(float64(i) / f.rate * float64(time.Second)))
			if !sleepUntil(ctx, next, stopAt) {
				break
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		rep.Started++
		id := fmt.Sprintf("%s-%d", f.idPrefix, i)
		wg.Go(func() {
			defer func() { <-slots }()
			t0 := time.Now()
			o, problem := benchOne(ctx, t, plan, id, f.timeout)
			record(id, t0, o, problem)
		})
	}
	wg.Wait()
	if ctx.Err() != nil && rep.StoppedEarly == "" {
		rep.StoppedEarly = "interrupted"
	}
	end := lastDone
	if end.IsZero() || len(rep.Problems) > 0 {
		end = time.Now()
	}
	rep.fill(lat, end.Sub(start))
	out := cmd.OutOrStdout()
	if f.json {
		err = rep.writeJSON(out)
	} else {
		err = rep.writeTable(out)
	}
	if err != nil {
		return err
	}
	if n := len(rep.Problems); n > 0 {
		return &exitError{code: exitFailed, msg: problemsMessage(rep)}
	}
	return nil
}
