package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/permissions"
	"github.com/agentbus/agentbus/retention"
	"github.com/agentbus/agentbus/schedule"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// Catalog reports whether some agent serves a capability.
type Catalog func(ctx context.Context, capability string) (bool, error)

// Config configures an Orchestrator. The zero value of every field but Bus
// means its default.
type Config struct {
	Bus *bus.Bus
	// Catalog decides which capabilities exist; default: a capability exists
	// when an agent instance is registered for it, or when its shared step
	// consumer exists (an agent that does not register, written in another
	// language with a bare NATS client, has bound to it).
	Catalog Catalog
	// Registry, when set, routes bare queries by semantic discovery; New
	// opens one with the local embedder by default. Give one opened with
	// the workers' embedder (cmd does, from --embed-url) so that their
	// cards' stored vectors are used as they are.
	Registry *discovery.Registry
	// Candidates is how many agents, those that best fit a bare query by
	// semantic discovery (healthy and less loaded first among close
	// scores), the planner sees with their cards; every other live agent
	// comes after them without its card (name and capabilities only), so
	// that the planner knows what is served without being handed the
	// whole registry. Default discovery.DefaultK (5).
	Candidates int
	// MinScore is the similarity below which discovery does not route a
	// bare query and the echo step is planned instead; default 0.05.
	MinScore float64
	// Planner plans bare queries; default HeuristicPlanner{MinScore: MinScore}.
	Planner Planner
	// ApprovalThreshold is the output confidence at or above which a step
	// that requires approval is approved without a human; default 0.85.
	ApprovalThreshold float64
	// Concurrency is how many submissions and how many replies are handled
	// at once; default 32.
	Concurrency int
	// AckWait for the submission and reply consumers: how soon a message
	// held by an orchestrator that died is handled by another; its handlers
	// take milliseconds. Default 5s.
	AckWait time.Duration
	// StepLease is how long a dispatched step may show no sign of life
	// before the watchdog looks for it: a step whose request is no longer
	// queued or running and whose reply is nowhere was lost (a server that
	// died before it flushed) and is dispatched again as its next attempt
	// (lease.go). A step handed back to its worker with a verdict has
	// that worker's AckWait instead (eager.go), and the watchdog first
	// looks at a workflow a third of StepLease after its first dispatch
	// (workflow.FirstLook). It is also how long a workflow may sit
	// unchanged before the checkpoint scan looks at it (scan.go). Default 90s, three times
	// the workers' default AckWait; negative turns the watchdog and the
	// scan off.
	StepLease time.Duration
	// StepHold is how long a step's request may still be held by its
	// consumer (delivered, never acknowledged nor redelivered) after the
	// watchdog stepped that consumer's leader down, before the attempt is
	// given up: its request deleted and the step dispatched again as a new
	// attempt whose stale replies never count (recover.go). It must exceed
	// the longest a live run can hold a request — the workers' StepTimeout
	// times their MaxDeliver, with backoff — or a live run's work is
	// thrown away; a step with its own timeout_ms is bounded by that
	// instead. Default 30m.
	StepHold time.Duration
	// SubmitBound is how old a submission still stored in
	// AGENTBUS_WORKFLOWS with no checkpoint may be before the reconciler
	// starts it from the stream itself (reconcile.go): a consumer that
	// holds it without redelivering must not strand an accepted workflow.
	// Default 30s.
	SubmitBound time.Duration
	// ScanInterval is how often the checkpoint scan and the submission
	// reconciler run (in one orchestrator at a time); default the smaller
	// of StepLease/2 and SubmitBound/2.
	ScanInterval time.Duration
	// ScanBudget bounds one scan: how many checkpoint revisions it reads;
	// a scan that stops there goes on from there the next time. Default
	// 20000.
	ScanBudget int
	Logger     *slog.Logger
	// Metrics, when set, records workflows, steps and phases (metrics.go);
	// orchestrators of one process may share one.
	Metrics *Metrics
	// TracerProvider records the workflow's spans (trace.go); default: a
	// no-op provider.
	TracerProvider trace.TracerProvider
	// Sessions keeps conversations: a submission with a session id loads
	// its turns and ends by appending one (session.go). Default: a store
	// on Bus with the sessions package's defaults.
	Sessions *sessions.Store
	// Rewriter, when set, rewrites a session's follow-up into a standalone
	// query (an LLM); its answer is checked and the deterministic
	// resolution stands in when it fails. Default: deterministic only.
	Rewriter Completer
	// TenantWeights are the tenants' shares of a busy capability (flow
	// control, admission.go); a tenant not named has weight 1.
	TenantWeights map[string]int
	// Limits bound tenants' use of capabilities, by LimitKey (flow
	// control, limits.go).
	Limits map[string]Limit
	// TokenLimits bound what tenants' steps spend on models, by
	// TokenLimitKey (flow control, tokens.go).
	TokenLimits map[string]TokenLimit
	// FlowControlOff dispatches every ready step at once, as before flow
	// control: a tenant's backlog then delays every other tenant behind it.
	FlowControlOff bool
	// ClearDelay is how long a running workflow's published outbox may
	// stay stored before a write clears it, if no transition replaced it
	// meanwhile (transition.go, flush). Default 50 ms; negative clears it
	// at once, after every transition, as before.
	ClearDelay time.Duration
	// PlainCheckpoints stores checkpoints as plain JSON, readable with
	// `nats kv get`, instead of compressed against the workflow
	// package's dictionary (workflow/codec.go): about six times the
	// bytes. Readers take either, whatever this says. It is set when the
	// servers S2-compress the checkpoints bucket (--compress-streams),
	// which compresses plain revisions better.
	PlainCheckpoints bool
	// FlowWindow is how many step requests may wait for a busy
	// capability's workers per worker slot before new ones wait for
	// admission (admission.go): smaller is fairer, larger is cheaper.
	// Default 1.
	FlowWindow float64
	// Permissions is the tool permissions table (--tool-permissions): per
	// tenant and role, the capabilities a plan may use and those whose
	// steps wait for a confirmation before they run. Nil allows all.
	Permissions permissions.Table
	// Retention says how long ended workflows are kept: one orchestrator
	// at a time purges those past it (retention.go). The zero value means
	// retention's defaults: completed 7 days, failed, canceled or
	// rejected 30 days.
	Retention retention.Policy
	// RetentionInterval is how often the retention sweep runs; default
	// 1m, negative: never (the workflows are kept until deleted).
	RetentionInterval time.Duration
}

func (c *Config) setDefaults() {
	if c.ClearDelay == 0 {
		c.ClearDelay = DefaultClearDelay
	}
	if c.FlowWindow <= 0 {
		c.FlowWindow = 1
	}
	if c.Concurrency == 0 {
		c.Concurrency = 32
	}
	if c.AckWait == 0 {
		c.AckWait = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = noop.NewTracerProvider()
	}
	if c.MinScore == 0 {
		c.MinScore = 0.05
	}
	if c.Candidates == 0 {
		c.Candidates = discovery.DefaultK
	}
	if c.ApprovalThreshold == 0 {
		c.ApprovalThreshold = 0.85
	}
	if c.StepLease == 0 {
		c.StepLease = DefaultStepLease
	}
	if c.StepHold == 0 {
		c.StepHold = DefaultStepHold
	}
	if c.SubmitBound == 0 {
		c.SubmitBound = DefaultSubmitBound
	}
	if c.ScanInterval == 0 {
		c.ScanInterval = min(c.StepLease, c.SubmitBound) / 2
	}
	if c.ScanBudget == 0 {
		c.ScanBudget = 20000
	}
}

// DefaultClearDelay is Config.ClearDelay's default: a chain's next reply
// comes long before it, a step of seconds costs the write, off the
// critical path.
const DefaultClearDelay = 50 * time.Millisecond

// DefaultStepLease is Config.StepLease's default: three times the workers'
// default AckWait (agents.WorkerConfig), the time JetStream takes to hand a
// dead worker's step to another.
const DefaultStepLease = 90 * time.Second

// DefaultStepHold is Config.StepHold's default: past the workers' default
// StepTimeout (5m) times their default MaxDeliver (5), with backoff.
const DefaultStepHold = 30 * time.Minute

// DefaultSubmitBound is Config.SubmitBound's default.
const DefaultSubmitBound = 30 * time.Second

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("orchestrator: config needs Bus"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("orchestrator: concurrency %d below 1", c.Concurrency))
	}
	if c.Candidates < 1 {
		errs = append(errs, fmt.Errorf("orchestrator: candidates %d below 1", c.Candidates))
	}
	if err := c.Permissions.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("orchestrator: %w", err))
	}
	if c.StepHold < 0 || c.SubmitBound < 0 {
		errs = append(errs, fmt.Errorf("orchestrator: step hold %s and submit bound %s must not be negative", c.StepHold, c.SubmitBound))
	}
	for k, l := range c.TokenLimits {
		if l.PerMinute <= 0 || l.Burst < 0 || math.IsInf(l.PerMinute+l.Burst, 0) || math.IsNaN(l.PerMinute+l.Burst) {
			errs = append(errs, fmt.Errorf("orchestrator: token limit %s: %g a minute, burst %g: must be positive", k, l.PerMinute, l.Burst))
		}
	}
	errs = append(errs, c.Retention.Validate())
	if c.StepLease > 0 && (c.ScanInterval <= 0 || c.ScanBudget < 1) {
		errs = append(errs, fmt.Errorf("orchestrator: scan interval %s and budget %d must be positive", c.ScanInterval, c.ScanBudget))
	}
	return errors.Join(errs...)
}

// Orchestrator runs workflows. Several may run against one NATS: they share
// durable consumers and coordinate through checkpoint revisions.
type Orchestrator struct {
	locks keyLocks // one a workflow in transition (keylock.go)
	cache sync.Map // checkpoint key → cached
	// jsonBufs holds the buffers a checkpoint's JSON is built in before
	// it is compressed (encode.go).
	jsonBufs sync.Pool
	cfg      Config
	// fitLimit is the size above which a checkpoint's inline outputs
	// move to the payloads store (payloads.go): 3/4 of the server's
	// message limit, room for headers and a transition's growth.
	fitLimit    int64
	bus         *bus.Bus
	log         *slog.Logger
	checkpoints *bus.KV
	controls    *bus.KV
	leases      *bus.KV
	admission   *admission // nil when flow control is off
	// unclear holds, by checkpoint key, the revision whose published
	// outbox a clear waits to remove (clearLater).
	unclear sync.Map
	// tokens is the tenants' token limits, nil without any.
	tokens    *tokenLimits
	scan      *scanner
	retention *retention.Sweeper // nil when the sweep is off
	tracer    trace.Tracer
	sessions  *sessions.Store
	schedules *schedule.Store // schedule.go
	concState
	// background runs work that no transition waits for (a session's
	// summary by a model); Run cancels backgroundCtx and waits for it.
	background       sync.WaitGroup
	backgroundCtx    context.Context
	cancelBackground context.CancelFunc
	// startedAt is when New made it: the watchdog gives a handed step's
	// worker a lease from then at least (lease.go), time to find it again
	// after every orchestrator was away.
	startedAt time.Time
}

// New checks cfg, opens the buckets it needs and makes sure the timers
// stream and the leases bucket exist.
func New(ctx context.Context, cfg Config) (*Orchestrator, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Every message in and out is checked against its schema: compiled
	// now, not by the first one.
	if err := schemas.Load(); err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	kv, err := cfg.Bus.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	// A bucket the servers S2-compress stores plain revisions in less
	// than zstd frames (it compresses across them): the store decides,
	// not the flag (a store provisioned before --compress-streams stays
	// uncompressed until --update-streams).
	if !cfg.PlainCheckpoints {
		if cfg.PlainCheckpoints, err = cfg.Bus.Compressed(ctx, "KV_"+subjects.BucketCheckpoints); err != nil {
			return nil, fmt.Errorf("orchestrator: %w", err)
		}
	}
	ctl, err := cfg.Bus.KV(ctx, subjects.BucketControl)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	// The timers stream and the leases bucket came after the others: a
	// deployment provisioned before them gains them here.
	if err := cfg.Bus.EnsureTimers(ctx); err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	leases, err := cfg.Bus.Leases(ctx)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	if err := cfg.Bus.EnsureQueue(ctx); err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	scheds, err := schedule.Open(ctx, cfg.Bus, events.SourceOrchestrator)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	if cfg.Registry == nil {
		if cfg.Registry, err = discovery.New(ctx, cfg.Bus, nil); err != nil {
			return nil, fmt.Errorf("orchestrator: %w", err)
		}
	}
	cfg.Planner = cfg.Metrics.planner(withDefaultPlanner(cfg))
	cfg.Metrics.watch(cfg.Registry)
	if cfg.Catalog == nil {
		b, reg := cfg.Bus, cfg.Registry
		cfg.Catalog = func(ctx context.Context, capability string) (bool, error) {
			if ok, err := reg.Serves(ctx, capability); ok || err != nil {
				return ok, err
			}
			name, err := subjects.StepConsumer(capability)
			if err != nil {
				return false, nil
			}
			return b.HasConsumer(ctx, subjects.StreamSteps, name)
		}
	}
	if cfg.Sessions == nil {
		if cfg.Sessions, err = sessions.New(sessions.Config{Bus: cfg.Bus, Logger: cfg.Logger}); err != nil {
			return nil, fmt.Errorf("orchestrator: %w", err)
		}
	}
	o := &Orchestrator{cfg: cfg, bus: cfg.Bus, log: cfg.Logger.With("component", "orchestrator"), checkpoints: kv, controls: ctl,
		leases: leases, sessions: cfg.Sessions, fitLimit: cfg.Bus.MaxPayload() * 3 / 4, schedules: scheds, startedAt: time.Now()}
	if !cfg.FlowControlOff {
		o.admission = newAdmission(o)
		o.tokens = newTokenLimits(o)
	} else if len(cfg.Limits)+len(cfg.TokenLimits) > 0 {
		return nil, fmt.Errorf("orchestrator: limits need flow control, which is off")
	}
	o.backgroundCtx, o.cancelBackground = context.WithCancel(context.WithoutCancel(ctx))
	o.scan = newScanner(o, leases)
	if o.retention, err = o.newSweeper(ctx); err != nil {
		return nil, err
	}
	o.tracer = cfg.TracerProvider.Tracer(tracerName)
	return o, nil
}

// Run consumes submissions, replies, timers and control messages, takes
// the results workers hand it, and scans active checkpoints now and then,
// until ctx ends.
func (o *Orchestrator) Run(ctx context.Context) error {
	if err := o.bus.SubscribeControl(ctx, subjects.AllControl, ControlQueue, o.handleControl); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Add(3)
	go func() {
		defer wg.Done()
		errs[0] = o.bus.Consume(ctx, bus.ConsumeConfig{
			Stream: subjects.StreamWorkflows, Durable: subjects.ConsumerSubmissions, Filter: subjects.AllSubmissions,
			AckWait: o.cfg.AckWait, Concurrency: o.cfg.Concurrency, OnMalformed: o.malformedSubmission,
			MaxDeliver: -1, // a submission or reply is never dropped: a workflow must not hang
		}, o.handleSubmission)
	}()
	go func() {
		defer wg.Done()
		errs[1] = o.bus.Consume(ctx, bus.ConsumeConfig{
			Stream: subjects.StreamReplies, Durable: subjects.ConsumerReplies, Filter: subjects.AllReplies,
			AckWait: o.cfg.AckWait, Concurrency: o.cfg.Concurrency, MaxDeliver: -1, OnMalformed: o.malformedReply,
		}, o.handleReply)
	}()
	go func() {
		defer wg.Done()
		errs[2] = o.bus.ConsumeTimers(ctx, bus.ConsumeConfig{
			Stream: subjects.StreamTimers, Durable: subjects.ConsumerTimers, Filter: subjects.AllTimers,
			AckWait: o.cfg.AckWait, Concurrency: o.cfg.Concurrency, MaxDeliver: -1,
		}, o.handleTimer)
	}()
	var schedErr, takeErr error
	wg.Go(func() { schedErr = o.runSchedules(ctx) })
	wg.Go(func() {
		takeErr = o.bus.TakeOffers(ctx, bus.TakeConfig{Subject: subjects.AllResults, Queue: ResultQueue,
			Concurrency: o.cfg.Concurrency, Timeout: o.cfg.AckWait}, o.handleResult)
	})
	if o.cfg.StepLease > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); o.scan.run(ctx) }()
	}
	if o.admission != nil {
		wg.Add(1)
		go func() { defer wg.Done(); o.admission.run(ctx) }()
	}
	if o.tokens != nil {
		wg.Add(1)
		go func() { defer wg.Done(); o.tokens.watch(ctx) }()
	}
	if o.retention != nil {
		wg.Go(func() { _ = o.retention.Run(ctx) })
	}
	wg.Wait()
	o.cancelBackground()
	o.background.Wait()
	return errors.Join(append(errs, schedErr, takeErr)...)
}

// Checkpoint returns a workflow's current checkpoint, or bus.ErrNotFound.
func (o *Orchestrator) Checkpoint(ctx context.Context, tenant, workflow string) (*workflow.Checkpoint, error) {
	cp, _, err := o.load(ctx, tenant, workflow)
	return cp, err
}

func isNotFound(err error) bool { return errors.Is(err, bus.ErrNotFound) }
