package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// WorkerConfig configures a Worker. The zero value of every field but Bus
// and Agents means its default.
type WorkerConfig struct {
	Bus    *bus.Bus
	Agents []Agent
	// Name identifies this worker instance in replies; default host-pid-random.
	Name string
	// Concurrency is how many steps of one capability run at once; default 8.
	Concurrency int
	// AckWait is how long a step may go without an in-progress ack before it
	// is redelivered to another worker; default 30s.
	AckWait time.Duration
	Logger  *slog.Logger
}

func (c *WorkerConfig) setDefaults() {
	if c.Name == "" {
		host, _ := os.Hostname()
		c.Name = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem with the configuration.
func (c WorkerConfig) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("agents: worker config needs Bus"))
	}
	if len(c.Agents) == 0 {
		errs = append(errs, errors.New("agents: worker config needs at least one agent"))
	}
	seen := map[string]string{}
	for _, a := range c.Agents {
		card := a.Card()
		if len(card.Capabilities) == 0 {
			errs = append(errs, fmt.Errorf("agents: agent %q declares no capability", card.Name))
		}
		for _, cp := range card.Capabilities {
			if err := subjects.ValidCapability(cp); err != nil {
				errs = append(errs, fmt.Errorf("agents: agent %q: %w", card.Name, err))
			} else if other, dup := seen[cp]; dup {
				errs = append(errs, fmt.Errorf("agents: capability %q served by both %q and %q", cp, other, card.Name))
			}
			seen[cp] = card.Name
		}
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("agents: concurrency %d below 1", c.Concurrency))
	}
	return errors.Join(errs...)
}

// Worker runs agents on their capabilities' shared consumers.
type Worker struct {
	cfg WorkerConfig
	log *slog.Logger
}

// NewWorker checks cfg.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, log: cfg.Logger.With("component", "worker", "worker", cfg.Name)}, nil
}

// Capabilities lists the capabilities the worker serves.
func (w *Worker) Capabilities() []string {
	var out []string
	for _, a := range w.cfg.Agents {
		out = append(out, a.Card().Capabilities...)
	}
	return out
}

func (w *Worker) consumeConfig(capability string) bus.ConsumeConfig {
	durable, _ := subjects.StepConsumer(capability)
	filter, _ := subjects.StepFilter(capability)
	return bus.ConsumeConfig{
		Stream: subjects.StreamSteps, Durable: durable, Filter: filter,
		AckWait: w.cfg.AckWait, Concurrency: w.cfg.Concurrency,
	}
}

// Start makes every capability's shared consumer exist, so that the
// orchestrator sees the capabilities as served once Start returns.
func (w *Worker) Start(ctx context.Context) error {
	for _, c := range w.Capabilities() {
		if err := w.cfg.Bus.EnsureConsumer(ctx, w.consumeConfig(c)); err != nil {
			return err
		}
	}
	return nil
}

// Run serves every capability until ctx ends, then lets in-flight steps finish.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 0)
	var mu sync.Mutex
	for _, a := range w.cfg.Agents {
		for _, c := range a.Card().Capabilities {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := w.cfg.Bus.Consume(ctx, w.consumeConfig(c), func(ctx context.Context, d *bus.Delivery) error {
					return w.handle(ctx, a, d)
				})
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}()
		}
	}
	w.log.Info("worker serving", "capabilities", w.Capabilities())
	wg.Wait()
	return errors.Join(errs...)
}

// handle runs one step and publishes its reply, then lets bus ack it.
func (w *Worker) handle(ctx context.Context, a Agent, d *bus.Delivery) error {
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
		Attempt: sr.Attempt, Query: sr.Query, Input: sr.Input, DependencyOutputs: sr.DependencyOutputs,
	}
	reply, err := subjects.Reply(req.TenantID, req.WorkflowID)
	if err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	start := time.Now()
	out, herr := w.run(ctx, a, req, d)
	key := events.StepKey(req.TenantID, req.WorkflowID, req.StepID, req.Attempt)
	source := events.SourceAgentPrefix + req.Capability
	var renv events.Envelope
	if herr != nil {
		w.log.Warn("step failed", "workflow", req.WorkflowID, "step", req.StepID, "err", herr)
		renv, err = events.New(events.TypeStepFailed, key, source, req.TenantID, req.WorkflowID, req.StepID, events.StepFailed{
			StepID: req.StepID, Capability: req.Capability, Attempt: req.Attempt, Error: herr.Error(), Worker: w.cfg.Name,
		})
	} else {
		renv, err = events.New(events.TypeStepCompleted, key, source, req.TenantID, req.WorkflowID, req.StepID, events.StepCompleted{
			StepID: req.StepID, Capability: req.Capability, Attempt: req.Attempt, Output: out, Worker: w.cfg.Name,
			DurationMS: float64(time.Since(start).Microseconds()) / 1000,
		})
	}
	if err != nil {
		return err
	}
	_, err = w.cfg.Bus.Publish(ctx, reply, renv, key)
	return err
}

// run calls the agent with in-progress acks while it works and turns a panic
// or an invalid output into an error.
func (w *Worker) run(ctx context.Context, a Agent, req Request, d *bus.Delivery) (out json.RawMessage, err error) {
	hb, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(max(w.cfg.AckWait/3, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-hb.Done():
				return
			case <-t.C:
				_ = d.InProgress()
			}
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agents: %s panicked: %v", req.Capability, r)
		}
	}()
	out, err = a.Handle(ctx, req, &stepEmitter{bus: w.cfg.Bus, req: req, source: events.SourceAgentPrefix + req.Capability})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("agents: %s returned invalid JSON", req.Capability)
	}
	return out, nil
}

func marshal(v any) (json.RawMessage, error) {
	if r, ok := v.(json.RawMessage); ok {
		return r, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("agents: marshal: %w", err)
	}
	return b, nil
}
