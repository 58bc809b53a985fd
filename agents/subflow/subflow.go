package subflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/agentbus/agentbus/workflow"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Metadata keys of a child workflow: the workflow and step it runs for,
// and how deep it is nested (the parent's depth plus one; a workflow
// without it is at depth 0).
const (
	MetadataParentWorkflow = "parent_workflow"
	MetadataParentStep     = "parent_step"
	MetadataDepth          = "depth"
)

// Reserved reports whether key is a metadata key Run sets on every child,
// which a caller's Child.Metadata may not name.
func Reserved(key string) bool {
	return key == MetadataParentWorkflow || key == MetadataParentStep || key == MetadataDepth
}

// DefaultMaxDepth is how deep children nest by default: a workflow
// submitted by a client is at depth 0, its children at 1, and so on.
const DefaultMaxDepth = 5

// ErrDepth is the error of a child that would be nested deeper than
// Config.MaxDepth. Retrying cannot fix it.
var ErrDepth = errors.New("subflow: child workflows nested too deep")

// Config configures a Runner. Bus and Source are required; the zero value
// of every other field means its default.
type Config struct {
	// Bus is where children are submitted, followed and canceled, and
	// where the parent's checkpoint is read.
	Bus *bus.Bus
	// Source is the CloudEvent source of the submissions and cancels
	// (the agent's, "/agentbus/agents/<capability>").
	Source string
	// MaxDepth bounds the nesting of children; default DefaultMaxDepth.
	MaxDepth int
	// CancelTimeout bounds the cancel of a child; default 10s.
	CancelTimeout time.Duration
	Logger        *slog.Logger
}

func (c *Config) setDefaults() {
	if c.MaxDepth == 0 {
		c.MaxDepth = DefaultMaxDepth
	}
	if c.CancelTimeout == 0 {
		c.CancelTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("subflow: config needs Bus"))
	}
	if c.Source == "" {
		errs = append(errs, errors.New("subflow: config needs Source"))
	}
	if c.MaxDepth < 1 || c.CancelTimeout <= 0 {
		errs = append(errs, fmt.Errorf("subflow: max depth %d, cancel timeout %s: want at least 1 and >0", c.MaxDepth, c.CancelTimeout))
	}
	return errors.Join(errs...)
}

// Runner starts and follows the child workflows of steps. It is safe for
// concurrent use.
type Runner struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and returns a Runner.
func New(cfg Config) (*Runner, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, log: cfg.Logger.With("component", "subflow")}, nil
}

// MaxDepth is the deepest child the Runner starts.
func (r *Runner) MaxDepth() int { return r.cfg.MaxDepth }

// ID is a child workflow id for a step attempt: prefix and a hash of the
// request's tenant, workflow, step and attempt and of parts (what tells
// the step's children apart). The same for a redelivery of the same
// attempt, so that it re-attaches to the child already started; another
// for a retry, which starts afresh. prefix is a few characters of
// [a-z0-9-].
func ID(prefix string, req agents.Request, parts ...string) string {
	fields := append([]string{req.TenantID, req.WorkflowID, req.StepID, strconv.Itoa(req.Attempt)}, parts...)
	h := sha256.Sum256([]byte(strings.Join(fields, "\x00")))
	return prefix + hex.EncodeToString(h[:16])
}

// checkpoint is what Run reads of a workflow's checkpoint (a
// workflow.Checkpoint, decoded in part: agents do not import the engine).
type checkpoint struct {
	Status   events.State      `json:"status"`
	Result   json.RawMessage   `json:"result,omitempty"`
	Error    *events.Error     `json:"error,omitempty"`
	Canceled string            `json:"canceled,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Priority int               `json:"priority,omitempty"`
}

// load reads a workflow's checkpoint; found is false when it has none.
func (r *Runner) load(ctx context.Context, tenant, wf string) (cp checkpoint, found bool, err error) {
	key, err := subjects.CheckpointKey(tenant, wf)
	if err != nil {
		return cp, false, err
	}
	kv, err := r.cfg.Bus.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		return cp, false, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		return cp, false, nil
	}
	if err != nil {
		return cp, false, err
	}
	if err := workflow.UnmarshalCheckpoint(e.Value, &cp); err != nil {
		return cp, false, fmt.Errorf("subflow: checkpoint of %s: %w", wf, err)
	}
	return cp, true, nil
}

// Parent is what a child inherits from the workflow whose step starts
// it.
type Parent struct {
	// Priority is the parent's (0: the default).
	Priority int
	// Depth is the parent's nesting depth: 0 for a workflow that is
	// nobody's child.
	Depth int
}

// Parent reads what a child of req's workflow inherits from its
// checkpoint.
func (r *Runner) Parent(ctx context.Context, req agents.Request) (Parent, error) {
	cp, found, err := r.load(ctx, req.TenantID, req.WorkflowID)
	if err != nil {
		return Parent{}, fmt.Errorf("subflow: reading workflow %s: %w", req.WorkflowID, err)
	}
	if !found {
		return Parent{}, fmt.Errorf("subflow: workflow %s has no checkpoint", req.WorkflowID)
	}
	p := Parent{Priority: cp.Priority}
	if d := cp.Metadata[MetadataDepth]; d != "" {
		// A depth that does not parse was not set by Run: read it as the
		// deepest, so that it cannot be used to nest without bound.
		if p.Depth, err = strconv.Atoi(d); err != nil || p.Depth < 0 {
			p.Depth = r.cfg.MaxDepth
		}
	}
	return p, nil
}

// cancel asks the orchestrators to cancel workflow wf, as the gateway's
// cancel does: a request on its control subject. It has a context of its
// own: the step's has ended when it is called.
func (r *Runner) cancel(tenant, wf, reason string) error {
	subj, err := subjects.Control(tenant, wf)
	if err != nil {
		return err
	}
	env, err := events.New(events.TypeControl, "cancel-"+wf, r.cfg.Source, tenant, wf, "", events.Control{Action: events.ActionCancel, Reason: reason})
	if err != nil {
		return err
	}
	ctx, stop := context.WithTimeout(context.Background(), r.cfg.CancelTimeout)
	defer stop()
	_, err = r.cfg.Bus.Request(ctx, subj, env)
	return err
}
