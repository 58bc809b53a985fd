package agents

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/subjects"
)

// DefaultConcurrency is how many steps of one capability a worker runs at
// once unless told otherwise (--concurrency). An agent mostly waits — on a
// model, a search service, the network — so a worker's slots are cheap:
// Hatchet's workers default to 100 slots, Temporal's Go SDK to 1,000
// activities. It was 8 until November 2026, which parked most steps of
// 64 echo chains in flight for flow control (BenchmarkWorkflowsParallel64
// +24 to +29 % at 32, three same-run pairs). Flow control counts its
// window in slots, so a quiet tenant still waits about the same number of
// rounds behind a busy one. A CPU-bound agent wants about as many as the
// cores it may use.
const DefaultConcurrency = 32

// WorkerConfig configures a Worker. The zero value of every field but Bus
// and Agents means its default.
type WorkerConfig struct {
	Bus    *bus.Bus
	Agents []Agent
	// Name identifies this worker instance; default host-pid-random.
	Name string
	// Concurrency is how many steps of one capability run at once;
	// default DefaultConcurrency.
	Concurrency int
	// AckWait is how long a step may go without an in-progress ack before
	// JetStream redelivers it to another worker; default 30s. In-progress
	// acks go out every AckWait/3 while a step runs.
	AckWait time.Duration
	// MaxDeliver is how many times a step is delivered before it is
	// dead-lettered; default 5.
	MaxDeliver int
	// RetryBase and RetryMax shape the exponential backoff between
	// deliveries of a failing step: RetryBase·2^(n-1), at most RetryMax;
	// defaults 250ms and 10s.
	RetryBase, RetryMax time.Duration
	// StepTimeout bounds one run of a step's handler; default 5m.
	StepTimeout time.Duration
	// ReplyRetry is how long a step's reply that the replies stream does
	// not store (it is electing a leader after a node loss, say) is tried
	// again, with in-progress acks holding the step meanwhile, before the
	// delivery is given up; default 30s. Without it every delivery during
	// an outage would be spent, and the step dead-lettered after
	// MaxDeliver of them although its agent answered each time.
	ReplyRetry time.Duration
	// HandWait is how long a step's answer, handed straight to an
	// orchestrator (bus.Hand on subjects.Result), waits for it to be
	// recorded before it goes the durable way, through the replies
	// stream, instead; at most AckWait/4. Default 2s; negative: every
	// answer goes through the stream. Handed, an answer skips a replicated
	// write and a delivery: the orchestrator records it in the workflow's
	// checkpoint before it says so. A hand that waited it out pauses
	// handing for 15 such waits.
	HandWait time.Duration
	// NoEager turns eager dispatch off: a worker handing an answer over
	// offers the slot it frees, and the orchestrator may hand the next step
	// of the same capability back with the verdict (orchestrator's
	// eager.go), to run at once without a pull. Off, every step is pulled.
	NoEager bool
	// Heartbeat is the registry refresh interval; a registration lives
	// 3·Heartbeat (rounded up to whole seconds, at least 1s) unless
	// refreshed, and reads "unreachable" after 2·Heartbeat. Default 5s.
	Heartbeat time.Duration
	// ShutdownGrace is how long in-flight steps may finish after Run's
	// context ends; past it they are handed back for redelivery. Default 10s.
	ShutdownGrace time.Duration
	// PayloadThreshold is the size in bytes above which a step's output
	// or artifact data is stored in the payloads object store and travels
	// as a reference (events.PayloadRef); default
	// bus.DefaultPayloadThreshold (256 KiB), negative: never (an output
	// above NATS's message limit then fails its step). References in a
	// step's input and dependency outputs are resolved whatever it is.
	PayloadThreshold int
	// Embedder embeds agent descriptions for discovery; default local.
	Embedder llm.Embedder
	Logger   *slog.Logger
	// Metrics, when set, records steps, queue waits, retries, dead
	// letters and the step backlog (metrics.go); workers of one process
	// share one.
	Metrics *Metrics
	// TracerProvider records the spans of each step run (trace.go);
	// default: a no-op provider.
	TracerProvider trace.TracerProvider
}

func (c *WorkerConfig) setDefaults() {
	if c.Name == "" {
		host, _ := os.Hostname()
		c.Name = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = 5
	}
	def(&c.AckWait, 30*time.Second)
	def(&c.RetryBase, 250*time.Millisecond)
	def(&c.RetryMax, 10*time.Second)
	def(&c.StepTimeout, 5*time.Minute)
	def(&c.ReplyRetry, 30*time.Second)
	def(&c.HandWait, 2*time.Second)
	def(&c.Heartbeat, discovery.DefaultHeartbeat)
	def(&c.ShutdownGrace, 10*time.Second)
	if c.PayloadThreshold == 0 {
		c.PayloadThreshold = bus.DefaultPayloadThreshold
	}
	if c.Embedder == nil {
		c.Embedder = llm.LocalEmbedder{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = noop.NewTracerProvider()
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
	if c.MaxDeliver < 1 {
		errs = append(errs, fmt.Errorf("agents: max deliver %d below 1", c.MaxDeliver))
	}
	if c.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("agents: ack wait %s below 1s", c.AckWait))
	}
	if c.Heartbeat < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("agents: heartbeat %s below 100ms", c.Heartbeat))
	}
	if c.RetryBase <= 0 || c.RetryMax < c.RetryBase {
		errs = append(errs, fmt.Errorf("agents: retry backoff base %s / max %s: want 0 < base <= max", c.RetryBase, c.RetryMax))
	}
	if c.ReplyRetry < 0 {
		errs = append(errs, fmt.Errorf("agents: reply retry %s is negative", c.ReplyRetry))
	}
	if c.PayloadThreshold >= 0 && c.PayloadThreshold < events.MaxRefLen {
		errs = append(errs, fmt.Errorf("agents: payload threshold %d bytes is below %d, the largest reference (negative: never offload)", c.PayloadThreshold, events.MaxRefLen))
	}
	if c.StepTimeout <= 0 || c.ShutdownGrace < 0 {
		errs = append(errs, errors.New("agents: step timeout must be positive and shutdown grace not negative"))
	}
	return errors.Join(errs...)
}

// backoff is the delay before delivery n+1 of a failing step.
func (c WorkerConfig) backoff(n uint64) time.Duration {
	d := c.RetryBase << min(n-1, 20)
	if d <= 0 || d > c.RetryMax {
		return c.RetryMax
	}
	return d
}
