package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// Why not Watermill. The design names Watermill's router and middleware
// (retry, timeout, recoverer, poison queue, correlation) for this runtime
// where they fit the ack model. They do not fit it: watermill-nats hands the
// handler a message.Message and keeps the jetstream.Msg to itself, waiting
// for Ack/Nack with a timer of AckWaitTimeout and then giving the message up
// with no ack at all. So a step that runs longer than AckWait cannot send
// in-progress acks and is redelivered while alive; the handler cannot see
// the delivery count that MaxDeliver and the dead letter are counted by;
// and its retry middleware retries inside the process, which a worker that
// dies forgets. The runtime therefore uses bus.Consume (nats.go/jetstream
// directly) and implements the same concerns as plain steps around the
// handler: recover (bus.Consume and run), timeout (StepTimeout), retry with
// backoff (NakWithDelay), poison queue (dead letter after MaxDeliver),
// correlation (the workflow and step ids carried in ce- headers).

// Worker runs agents on their capabilities' shared consumers, registers
// them in the registry, and exposes each as a NATS micro service.
type Worker struct {
	cfg      WorkerConfig
	log      *slog.Logger
	registry *discovery.Registry
	agents   []*running
	host     string
	started  time.Time
	cancels  *cancels
	// handPaused is when handing may resume (unix ns) after a hand got
	// no verdict in time: answers go through the stream meanwhile.
	handPaused atomic.Int64
	// handedBack holds, by delivery, the step request an orchestrator
	// handed back with the verdict on its answer (eager.go).
	handedBack sync.Map
}

// running is one agent in this worker.
type running struct {
	agent Agent
	card  Card
	// stats counts every step the agent ran (the registry and the card
	// report it); byCapability counts them per capability, for each
	// capability's micro endpoint: an agent with two capabilities must not
	// report its total on both.
	stats        stats
	byCapability map[string]*stats
	instance     string
	service      *bus.Service
	text         string
	vector       []float32
}

// NewWorker checks cfg.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Every message in and out is checked against its schema: compiled
	// now, not by the first one.
	if err := schemas.Load(); err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	host, _ := os.Hostname()
	w := &Worker{cfg: cfg, log: cfg.Logger.With("component", "worker", "worker", cfg.Name), host: host, cancels: newCancels()}
	for _, a := range cfg.Agents {
		card := a.Card()
		r := &running{agent: a, card: card, instance: cfg.Name + "-" + card.Name, byCapability: map[string]*stats{}}
		for _, c := range card.Capabilities {
			r.byCapability[c] = &stats{}
		}
		w.agents = append(w.agents, r)
	}
	return w, nil
}

// Name is the worker's instance name.
func (w *Worker) Name() string { return w.cfg.Name }

// Capabilities lists the capabilities the worker serves.
func (w *Worker) Capabilities() []string {
	var out []string
	for _, r := range w.agents {
		out = append(out, r.card.Capabilities...)
	}
	return out
}

func (w *Worker) consumeConfig(capability string) bus.ConsumeConfig {
	durable, _ := subjects.StepConsumer(capability)
	filter, _ := subjects.StepFilter(capability)
	return bus.ConsumeConfig{
		Stream: subjects.StreamSteps, Durable: durable, Filter: filter,
		AckWait: w.cfg.AckWait, Concurrency: w.cfg.Concurrency,
		// The worker counts deliveries itself (see handle), so that a step
		// whose last delivery died with its worker is still dead-lettered
		// and answered, never left hanging.
		MaxDeliver: -1, Backoff: w.cfg.backoff, ShutdownGrace: w.cfg.ShutdownGrace,
	}
}

// Start makes every capability's shared consumer exist, registers every
// agent and starts its micro service, so that the orchestrator sees the
// capabilities as served once Start returns. Run calls it if needed.
func (w *Worker) Start(ctx context.Context) error {
	if w.registry != nil {
		return nil
	}
	for _, c := range w.Capabilities() {
		if err := w.cfg.Bus.EnsureConsumer(ctx, w.consumeConfig(c)); err != nil {
			return err
		}
		w.cfg.Metrics.serve(w.cfg.Bus, c)
	}
	reg, err := discovery.New(ctx, w.cfg.Bus, w.cfg.Embedder)
	if err != nil {
		return err
	}
	if err := w.watchCancels(ctx); err != nil {
		return err
	}
	w.started = time.Now().UTC()
	for _, r := range w.agents {
		r.text = discovery.EmbeddingText(r.card.Name, r.card.Capabilities, r.card.Description, r.card.Examples)
		vs, err := w.cfg.Embedder.Embed(ctx, []string{r.text})
		if err != nil {
			return fmt.Errorf("agents: embed %s with %s: %w", r.card.Name, w.cfg.Embedder.Name(), err)
		}
		r.vector = vs[0]
		if r.service, err = w.cfg.Bus.AddService(ctx, w.serviceConfig(r)); err != nil {
			return err
		}
	}
	w.registry = reg
	w.heartbeat(ctx)
	return nil
}

// Run serves every capability until ctx ends; then it stops fetching, lets
// in-flight steps finish within ShutdownGrace (handing back the rest),
// unregisters and returns.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, r := range w.agents {
		for _, c := range r.card.Capabilities {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := w.cfg.Bus.Consume(ctx, w.consumeConfig(c), func(hctx context.Context, d *bus.Delivery) error {
					err := w.traced(hctx, r, c, d)
					if back := w.takeBack(d); back != nil {
						d.Then(func(ctx context.Context) { w.runHanded(ctx, r, c, *back) })
					}
					return err
				})
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(w.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.heartbeat(ctx)
			}
		}
	}()
	w.log.Info("worker serving", "capabilities", w.Capabilities())
	wg.Wait()
	w.stop()
	return errors.Join(errs...)
}

// stop unregisters the agents and stops their services.
func (w *Worker) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range w.agents {
		if w.registry != nil {
			if err := w.registry.Remove(ctx, r.instance); err != nil {
				w.log.Warn("unregister", "agent", r.card.Name, "err", err)
			}
		}
		if r.service != nil {
			_ = r.service.Stop()
		}
	}
}

// handle runs one delivery of a step pulled from capability's consumer:
// dead-letters it past MaxDeliver, otherwise runs the agent and publishes
// its reply, or asks for a retry.
func (w *Worker) handle(ctx context.Context, r *running, capability string, d *bus.Delivery) error {
	env := d.Envelope
	if env.Type != events.TypeStepRequested || env.WorkflowID == "" {
		return fmt.Errorf("%w: %s without a workflow id on a step subject", bus.ErrPoison, env.Type)
	}
	var sr events.StepRequested
	if err := env.Unmarshal(&sr); err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	req := Request{
		TenantID: env.TenantID, WorkflowID: env.WorkflowID, StepID: sr.StepID, Capability: sr.Capability,
		Attempt: sr.Attempt, Delivery: int(d.Delivered), Query: sr.Query, Input: sr.Input, DependencyOutputs: sr.DependencyOutputs,
		Conversation: sr.Conversation, Problems: sr.Problems, User: sr.User, Role: sr.Role,
		timeout: time.Duration(sr.TimeoutMS) * time.Millisecond, served: capability,
	}
	key, _ := subjects.CheckpointKey(req.TenantID, req.WorkflowID)
	spanAttempt(ctx, req.Attempt)
	if reason, ok := w.cancels.isCanceled(key); ok && w.stillCanceled(ctx, key) {
		w.log.Info("step of a canceled workflow dropped", "workflow", req.WorkflowID, "step", req.StepID, "reason", reason)
		spanFailed(ctx, "canceled: "+reason)
		return nil // acked, never run
	}
	if d.Delivered > uint64(w.cfg.MaxDeliver) {
		w.cfg.Metrics.redelivered(capability)
		// The previous delivery never answered: its worker died or hung.
		return w.giveUp(ctx, d, req, fmt.Sprintf("delivered %d times without an answer (max %d): the worker holding it died or hung", d.Delivered-1, w.cfg.MaxDeliver))
	}
	capStats := r.byCapability[capability]
	start := r.stats.begin()
	capStats.begin()
	queued := queueWait(env.Time, start)
	w.cfg.Metrics.started(ctx, capability, d.Delivered, queued)
	sctx, done := w.cancels.track(ctx, key)
	sctx, spent := llm.WithMeter(sctx)
	out, err := w.run(sctx, r.agent, req, d)
	req.usage = usageOf(spent())
	cause := context.Cause(sctx)
	canceled := errors.Is(cause, errCanceled)
	done()
	r.stats.end(start, err, canceled)
	capStats.end(start, err, canceled)
	ran := time.Since(start)
	req.queuedMS, req.runMS = millis(queued), millis(ran)
	if errors.Is(cause, errRecorded) && !w.stillCanceled(ctx, key) {
		// Stopped by a record the bucket no longer holds: the watch
		// replayed a cancel that a resume has since withdrawn. Acked with
		// no answer, the step would wait for its lease: it is delivered
		// again and runs. (A cancel seen on the control subject is not
		// checked: its record may not be written yet, and it is live.)
		w.cfg.Metrics.finished(ctx, capability, OutcomeRetried, ran)
		w.log.Info("step stopped by a withdrawn cancel: delivered again", "workflow", req.WorkflowID, "step", req.StepID)
		return fmt.Errorf("%w: step %s stopped by a withdrawn cancel", bus.ErrHandBack, req.StepID)
	}
	if canceled {
		reason, _ := w.cancels.isCanceled(key)
		spanFailed(ctx, "canceled: "+reason)
		w.cfg.Metrics.finished(ctx, capability, OutcomeCanceled, ran)
		w.log.Info("step canceled with its workflow", "workflow", req.WorkflowID, "step", req.StepID)
		return nil // acked; the workflow is over, nobody waits for a reply
	}
	if err == nil {
		w.cfg.Metrics.finished(ctx, capability, OutcomeCompleted, ran)
		return w.reply(ctx, d, req, events.TypeStepCompleted, events.StepCompleted{
			StepID: req.StepID, Capability: req.Capability, Attempt: req.Attempt, Output: out, Worker: w.cfg.Name,
			DurationMS: req.runMS, QueuedMS: req.queuedMS, Usage: req.usage,
		})
	}
	if ctx.Err() != nil {
		// The worker is shutting down past its grace: hand the step back.
		w.cfg.Metrics.finished(ctx, capability, OutcomeRetried, ran)
		return fmt.Errorf("%w: %w", bus.ErrHandBack, err)
	}
	w.log.Warn("step failed", "workflow", req.WorkflowID, "step", req.StepID, "delivery", d.Delivered, "err", err)
	if errors.Is(err, ErrPermanent) || d.Delivered >= uint64(w.cfg.MaxDeliver) {
		w.cfg.Metrics.finished(ctx, capability, OutcomeFailed, ran)
		return w.giveUp(ctx, d, req, fmt.Sprintf("failed on delivery %d of %d: %v", d.Delivered, w.cfg.MaxDeliver, err))
	}
	w.cfg.Metrics.finished(ctx, capability, OutcomeRetried, ran)
	return err // bus naks with backoff; JetStream redelivers
}

// giveUp dead-letters the step with the reason and answers the workflow
// with step.failed, so that nothing waits for it forever.
func (w *Worker) giveUp(ctx context.Context, d *bus.Delivery, req Request, reason string) error {
	subj, err := subjects.DeadLetter(req.TenantID, req.Capability)
	if err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	if err := w.cfg.Bus.DeadLetter(ctx, d, subj, reason, w.cfg.Name); err != nil {
		return err
	}
	spanFailed(ctx, "dead-lettered: "+reason)
	w.cfg.Metrics.deadLettered(req.Capability)
	return w.reply(ctx, d, req, events.TypeStepFailed, events.StepFailed{
		StepID: req.StepID, Capability: req.Capability, Attempt: req.Attempt, Error: reason, Worker: w.cfg.Name,
		QueuedMS: req.queuedMS, DurationMS: req.runMS, Usage: req.usage,
	})
}

// usageOf is a run's model spending as a reply carries it (none when it
// called no model).
func usageOf(s llm.Spent) *events.Usage {
	if s.Calls == 0 {
		return nil
	}
	return &events.Usage{PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, Calls: s.Calls, Models: s.Models}
}

// reply publishes a step's answer with the step attempt's dedup key: a step
// redelivered and answered twice is stored once. A publish the stream does
// not acknowledge is tried again, with backoff, for up to ReplyRetry while
// in-progress acks hold the step: the reply, not another delivery, waits
// out the stream's outage.
func (w *Worker) reply(ctx context.Context, d *bus.Delivery, req Request, typ events.Type, payload any) (err error) {
	subj, err := subjects.Reply(req.TenantID, req.WorkflowID)
	if err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	key := events.StepKey(req.TenantID, req.WorkflowID, req.StepID, req.Attempt)
	env, err := events.New(typ, key, events.SourceAgentPrefix+req.Capability, req.TenantID, req.WorkflowID, req.StepID, payload)
	if err != nil {
		return err
	}
	traceEnvelope(ctx, &env)
	handed := time.Now()
	if ok, back := w.hand(ctx, req, env); ok {
		w.cfg.Metrics.answered(req.served, AnswerHanded)
		if back != nil {
			w.handedBack.Store(d, back)
		}
		return nil
	}
	if time.Since(handed) > w.cfg.AckWait/10 {
		// The hand waited: hold the step anew, so that the hand and the
		// publish's first try together stay inside AckWait.
		_ = d.InProgress()
	}
	defer func() {
		if err == nil {
			w.cfg.Metrics.answered(req.served, AnswerStreamed)
		}
	}()
	// The first try is bounded well inside AckWait, since nothing holds
	// the step while it waits (bus.Publish waits out an election until its
	// context ends); the tries after it run under in-progress acks.
	_, err = w.publishWithin(ctx, w.cfg.AckWait/2, subj, env, key)
	if err == nil || ctx.Err() != nil || w.cfg.ReplyRetry <= 0 {
		return err
	}
	defer d.KeepInProgress(ctx, w.cfg.AckWait/3)()
	until := time.Now().Add(w.cfg.ReplyRetry)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		w.log.Warn("step reply not stored; trying again", "workflow", req.WorkflowID, "step", req.StepID, "delivery", d.Delivered, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(min(wait, time.Until(until))):
		}
		if _, err = w.publishWithin(ctx, min(time.Second, time.Until(until)), subj, env, key); err == nil || ctx.Err() != nil || time.Now().After(until) {
			return err
		}
	}
}

// hand gives a step's answer straight to an orchestrator and reports
// whether one recorded it. Any failure (no orchestrator listening, one that
// did not answer in HandWait, a refusal) leaves the answer to the replies
// stream; if an orchestrator recorded it after all, the copy from the
// stream finds its attempt answered and changes nothing.
//
// A hand that got no verdict in time pauses handing for handPauseFactor
// waits: whatever held it up (an orchestrator stopped or swamped, or a
// NATS user that may not publish on the result subject, whose refusal the
// server reports only to the connection's error handler) would otherwise
// cost every step that wait.
func (w *Worker) hand(ctx context.Context, req Request, env events.Envelope) (bool, *events.Envelope) {
	if w.cfg.HandWait < 0 || time.Now().UnixNano() < w.handPaused.Load() {
		return false, nil
	}
	subj, err := subjects.Result(req.TenantID, req.WorkflowID)
	if err != nil {
		return false, nil
	}
	wait := min(w.cfg.HandWait, w.cfg.AckWait/4)
	hctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	offer := bus.Offer{Capability: req.served, Lease: w.cfg.AckWait}
	if w.cfg.NoEager || ctx.Err() != nil {
		offer = bus.Offer{}
	}
	back, err := w.cfg.Bus.HandOffer(hctx, subj, env, offer)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			pause := handPauseFactor * wait
			w.handPaused.Store(time.Now().Add(pause).UnixNano())
			w.log.Info("a step's answer got no verdict from an orchestrator in time: answers go through the replies stream for a while",
				"wait", wait, "for", pause, "subject", subj,
				"hint", "an orchestrator stopped or swamped, or a NATS user without publish permission on agentbus.<tenant>.result.* (re-render nats-config)")
		} else if !errors.Is(err, bus.ErrNoResponder) {
			w.log.Debug("step answer not taken; sent through the replies stream", "workflow", req.WorkflowID, "step", req.StepID, "err", err)
		}
		return false, nil
	}
	return true, back
}

// handPauseFactor is how many hand waits handing pauses after one that
// got no verdict in time (30s at the default 2s).
const handPauseFactor = 15

// publishWithin publishes with a deadline of limit from now.
func (w *Worker) publishWithin(ctx context.Context, limit time.Duration, subj string, env events.Envelope, key string) (bus.Published, error) {
	ctx, cancel := context.WithTimeout(ctx, max(limit, 100*time.Millisecond))
	defer cancel()
	return w.cfg.Bus.Publish(ctx, subj, env, key)
}

// run calls the agent under StepTimeout with in-progress acks while it
// works, and turns a panic or an invalid output into an error.
func (w *Worker) run(ctx context.Context, a Agent, req Request, d *bus.Delivery) (out json.RawMessage, err error) {
	limit := w.cfg.StepTimeout
	if req.timeout > 0 && req.timeout < limit {
		limit = req.timeout
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	defer d.KeepInProgress(ctx, w.cfg.AckWait/3)()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agents: %s panicked: %v", req.Capability, r)
		}
	}()
	if err := resolvePayloads(sctx, w.cfg.Bus, &req); err != nil {
		return nil, err
	}
	out, err = a.Handle(sctx, req, &stepEmitter{bus: w.cfg.Bus, req: req, source: events.SourceAgentPrefix + req.Capability, threshold: w.cfg.PayloadThreshold})
	if err != nil {
		if errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("agents: step timed out after %s: %w", limit, err)
		}
		return nil, err
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	if !events.ValidJSON(out) {
		return nil, fmt.Errorf("agents: %s returned invalid JSON", req.Capability)
	}
	return offload(sctx, w.cfg.Bus, w.cfg.PayloadThreshold, req, "output", out)
}

func marshal(v any) (json.RawMessage, error) {
	if r, ok := v.(json.RawMessage); ok {
		return r, nil
	}
	b, err := events.MarshalData(v)
	if err != nil {
		return nil, fmt.Errorf("agents: marshal: %w", err)
	}
	return b, nil
}

// queueWait is how long a step waited between its request's publish and
// start; zero when the clocks disagree.
func queueWait(published, start time.Time) time.Duration {
	if published.IsZero() || start.Before(published) {
		return 0
	}
	return start.Sub(published)
}

// millis is d in milliseconds with microsecond precision.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
