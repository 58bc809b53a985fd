package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
)

// InputError is a plan step whose input does not satisfy the input
// schema its capability's agent registered (Registration.InputSchemas).
type InputError struct {
	// Index is the step's place in the plan, StepID its id.
	Index      int
	StepID     string
	Capability string
	// Problems point into the step's input ("/a"; "" for the whole input).
	Problems []schemas.Problem
}

// Pointer is where in the submission the first problem is:
// "/plan/steps/<index>/input" and the problem's pointer.
func (e *InputError) Pointer() string {
	p := fmt.Sprintf("/plan/steps/%d/input", e.Index)
	if len(e.Problems) > 0 {
		p += e.Problems[0].Pointer
	}
	return p
}

func (e *InputError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = fmt.Sprintf("/plan/steps/%d/input%s: %s", e.Index, p.Pointer, p.Message)
	}
	return fmt.Sprintf("step %q: the input does not fit the input schema of capability %q: %s", e.StepID, e.Capability, strings.Join(parts, "; "))
}

// CheckInputs checks the input of each step of p whose capability has a
// registered input schema against it, and returns an *InputError for
// the first step whose input does not fit. A step without input is
// checked as {} (an MCP tool called with no arguments). Steps whose
// capability no agent registered, or registered without a schema, pass:
// other checks refuse an unknown capability. It reads the index, and the
// bucket only when the index has not heard of a capability yet (an agent
// registered a moment ago).
func (r *Registry) CheckInputs(ctx context.Context, p events.Plan) error {
	ix, err := r.ready(ctx)
	if err != nil {
		return err
	}
	var listed []Instance // read once, if a capability is new to the index
	for i, s := range p.Steps {
		raw, served := ix.inputSchema(s.Capability)
		if !served {
			if at, ok := r.unlisted.Load(s.Capability); ok && r.now().Sub(at.(time.Time)) < time.Second {
				continue
			}
			r.unlisted.Store(s.Capability, r.now())
			if listed == nil {
				if listed, err = r.List(ctx); err != nil {
					return err
				}
			}
			raw = newestSchema(listed, s.Capability)
		}
		if len(raw) == 0 {
			continue
		}
		sch, err := r.schemas.compile(s.Capability, raw)
		if err != nil {
			continue // the agent's own problem: its steps fail at the agent
		}
		in := []byte(s.Input)
		if len(in) == 0 || string(in) == "null" {
			in = []byte("{}")
		}
		if err := sch.Validate(in); err != nil {
			var ve *schemas.ValidationError
			if !errors.As(err, &ve) {
				return err
			}
			return &InputError{Index: i, StepID: s.ID, Capability: s.Capability, Problems: ve.Problems}
		}
	}
	return nil
}

// newestSchema is the input schema of capability registered by the
// newest of list's instances that serve it.
func newestSchema(list []Instance, capability string) json.RawMessage {
	var best *Instance
	for i := range list {
		in := &list[i]
		if slices.Contains(in.Capabilities, capability) && (best == nil || in.StartedAt.After(best.StartedAt)) {
			best = in
		}
	}
	if best == nil {
		return nil
	}
	return best.InputSchemas[capability]
}

// inputSchema returns the input schema of capability registered by the
// newest instance that serves it, and whether any instance serves it.
func (ix *index) inputSchema(capability string) (json.RawMessage, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var best *instance
	for _, in := range ix.instances {
		if slices.Contains(in.reg.Capabilities, capability) && (best == nil || in.reg.StartedAt.After(best.reg.StartedAt)) {
			best = in
		}
	}
	if best == nil {
		return nil, false
	}
	return best.reg.InputSchemas[capability], true
}

// schemaCache keeps compiled input schemas by capability and text, so
// that a submission does not compile its steps' schemas again. It holds
// at most schemaCacheMax; past that it starts again. Safe for concurrent
// use; the zero value is ready.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*schemas.Schema
}

const schemaCacheMax = 256

func (c *schemaCache) compile(capability string, raw json.RawMessage) (*schemas.Schema, error) {
	key := capability + "\x00" + string(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[key]; ok {
		return s, nil
	}
	s, err := schemas.Compile("input of "+capability, raw)
	if err != nil {
		return nil, err
	}
	if c.m == nil || len(c.m) >= schemaCacheMax {
		c.m = map[string]*schemas.Schema{}
	}
	c.m[key] = s
	return s, nil
}
