package watermill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// SourcePublisher is the CloudEvent source of the events a Publisher
// writes.
const SourcePublisher = "/agentbus/watermill"

// ErrMessage: a message cannot be published (no workflow, a bad id); the
// error says which message and why.
var ErrMessage = errors.New("watermill: message not publishable")

// PublisherConfig configures a Publisher. Bus is required; the zero value
// of every other field means its default.
type PublisherConfig struct {
	Bus *bus.Bus
	// Workflow is the workflow a message without MetaWorkflow metadata is
	// added to; empty: such a message is refused.
	Workflow string
	// Timeout bounds one Publish call (the stream's acks); default 30s.
	Timeout time.Duration
	// Logger logs; default none.
	Logger wm.LoggerAdapter
}

func (c *PublisherConfig) setDefaults() {
	c.Timeout = cmp.Or(c.Timeout, 30*time.Second)
	if c.Logger == nil {
		c.Logger = wm.NopLogger{}
	}
}

// Validate reports every problem with the configuration.
func (c PublisherConfig) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, fmt.Errorf("%w: Bus is required", ErrConfig))
	}
	if c.Workflow != "" {
		if err := subjects.ValidWorkflow(c.Workflow); err != nil {
			errs = append(errs, fmt.Errorf("%w: Workflow: %w", ErrConfig, err))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%w: Timeout %s is negative", ErrConfig, c.Timeout))
	}
	return errors.Join(errs...)
}

// Publisher adds Watermill messages to workflows' event logs as custom
// events (events.TypeCustom), where every follower of the workflow — the
// SSE and WebSocket clients, the dashboard, a Subscriber — sees them
// among the orchestrator's own. The topic is the tenant; the workflow
// comes from each message's MetaWorkflow metadata (or the config's
// Workflow), an optional step from MetaStep. The payload's bytes and the
// rest of the metadata travel unchanged; the message UUID becomes the
// event's id and its dedup key, so a Publish retried within the events
// stream's duplicate window (2 minutes by default) stores each message
// once. It is safe for concurrent use.
//
// It does not check that the workflow exists or is still running: an
// event added after the workflow's terminal event is stored and read by
// a Subscriber, but followers of that workflow have stopped reading.
type Publisher struct {
	cfg    PublisherConfig
	mu     sync.RWMutex
	closed bool
}

var _ message.Publisher = (*Publisher)(nil)

// NewPublisher checks cfg and makes a Publisher.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg}, nil
}

// Publish stores the messages in the order given and returns once the
// stream has acknowledged every one. Each message is checked first: if
// any cannot be published, none is. If storing fails part way, some
// messages may be stored; publishing them all again stores each once.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return fmt.Errorf("%w: publish to %s", ErrClosed, topic)
	}
	if err := subjects.ValidTenant(topic); err != nil {
		return fmt.Errorf("watermill: topic must be a tenant id: %w", err)
	}
	batch := make([]bus.Pending, 0, len(msgs))
	for i, m := range msgs {
		pend, err := p.pending(topic, m)
		if err != nil {
			return fmt.Errorf("%w: message %d (uuid %q): %w", ErrMessage, i, m.UUID, err)
		}
		batch = append(batch, pend)
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
	defer cancel()
	if err := p.cfg.Bus.PublishBatch(ctx, batch); err != nil {
		return fmt.Errorf("watermill: publish to %s: %w", topic, err)
	}
	return nil
}

// pending turns one message into the custom event that carries it.
func (p *Publisher) pending(tenant string, m *message.Message) (bus.Pending, error) {
	if m.UUID == "" {
		return bus.Pending{}, errors.New("UUID is empty; it becomes the event id")
	}
	workflow := cmp.Or(m.Metadata.Get(MetaWorkflow), p.cfg.Workflow)
	if workflow == "" {
		return bus.Pending{}, fmt.Errorf("no workflow: set metadata %q (or PublisherConfig.Workflow)", MetaWorkflow)
	}
	if err := subjects.ValidWorkflow(workflow); err != nil {
		return bus.Pending{}, fmt.Errorf("metadata %q: %w", MetaWorkflow, err)
	}
	step := m.Metadata.Get(MetaStep)
	if step != "" {
		if err := subjects.ValidStep(step); err != nil {
			return bus.Pending{}, fmt.Errorf("metadata %q: %w", MetaStep, err)
		}
	}
	env, err := events.New(events.TypeCustom, m.UUID, SourcePublisher, tenant, workflow, step,
		events.NewCustom(m.Payload, ownMetadata(m.Metadata)))
	if err != nil {
		return bus.Pending{}, err
	}
	subject, err := subjects.Events(tenant, workflow)
	if err != nil {
		return bus.Pending{}, err
	}
	return bus.Pending{Subject: subject, Env: env, MsgID: tenant + "/custom/" + m.UUID}, nil
}

// ownMetadata is a message's metadata without the keys a Subscriber
// sets from the event itself (a message read from agentbus and published
// again would otherwise carry its old offset).
func ownMetadata(md message.Metadata) map[string]string {
	out := maps.Clone(map[string]string(md))
	for _, k := range derivedKeys {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

var derivedKeys = []string{MetaOffset, MetaEpoch, MetaType, MetaCEType, MetaTenant, MetaWorkflow, MetaStep, MetaTime}

// Close refuses later publishes; publishes under way finish first.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}
