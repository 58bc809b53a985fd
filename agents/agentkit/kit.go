package agentkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/schemas"
)

// Method values an agent's output reports.
const (
	MethodHeuristic = "heuristic"
	MethodLLM       = "llm"
)

// InputSchema and OutputSchema name a capability's schemas:
// "agent.<capability>.input" and "agent.<capability>.output".
func InputSchema(capability string) string  { return "agent." + capability + ".input" }
func OutputSchema(capability string) string { return "agent." + capability + ".output" }

// Decode validates the step's input against schema and decodes it into v.
// An empty input is "{}". A bad input is a permanent failure: retrying the
// same input cannot fix it; the error names each bad field's JSON pointer.
func Decode(req agents.Request, schema string, v any) error {
	in := bytes.TrimSpace(req.Input)
	if len(in) == 0 || bytes.Equal(in, []byte("null")) {
		in = []byte("{}")
	}
	if err := schemas.Validate(schema, in); err != nil {
		return fmt.Errorf("%w: step %q input: %w", agents.ErrPermanent, req.StepID, err)
	}
	if err := json.Unmarshal(in, v); err != nil {
		return fmt.Errorf("%w: step %q input: %w", agents.ErrPermanent, req.StepID, err)
	}
	return nil
}

// Encode marshals v and validates it against schema. An output that fails
// its own schema is a bug in the agent, reported as a permanent failure.
func Encode(schema string, v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: encode output: %w", agents.ErrPermanent, err)
	}
	if err := schemas.Validate(schema, b); err != nil {
		return nil, fmt.Errorf("%w: output: %w", agents.ErrPermanent, err)
	}
	return b, nil
}

// Dependency decodes the output of the dependency step that ran the given
// capability (the planners name steps after their capability; a step id
// that merely starts with "<capability>" also matches, e.g. "search-2").
// It reports false when no such dependency ran or its output is null (an
// optional step that failed).
func Dependency(req agents.Request, capability string, v any) bool {
	for id, out := range req.DependencyOutputs {
		if id != capability && !hasPrefix(id, capability) {
			continue
		}
		if len(bytes.TrimSpace(out)) == 0 || bytes.Equal(bytes.TrimSpace(out), []byte("null")) {
			continue
		}
		if json.Unmarshal(out, v) == nil {
			return true
		}
	}
	return false
}

func hasPrefix(id, capability string) bool {
	return len(id) > len(capability) && id[:len(capability)] == capability &&
		(id[len(capability)] == '-' || id[len(capability)] == '_' || id[len(capability)] == '.')
}

// Completer is the LLM an agent may use (an *llm.Chat).
type Completer interface {
	Name() string
	CompleteJSON(ctx context.Context, system, user string) (string, error)
}

// TryLLM asks c for a JSON answer and hands it to parse. It returns true
// when the LLM answered and parse accepted the answer. With no LLM it
// returns false at once. When the LLM fails (down, timeout, an answer parse
// rejects) it reports that in a progress event — the step goes on with its
// heuristic, and says so — and returns false with the reason.
func TryLLM(ctx context.Context, emit agents.Emitter, c Completer, system, user string, parse func(answer string) error) (bool, string) {
	if c == nil {
		return false, ""
	}
	answer, err := c.CompleteJSON(ctx, system, user)
	if err == nil {
		err = parse(answer)
	}
	if err == nil {
		return true, ""
	}
	if ctx.Err() != nil {
		return false, ctx.Err().Error()
	}
	reason := fmt.Sprintf("LLM %s failed: %v; used the heuristic", c.Name(), err)
	if emit != nil {
		_ = emit.Progress(ctx, 10, reason)
	}
	return false, reason
}

// LLMFirst is the flow of an agent that asks an LLM and falls back to its
// heuristic: it tries c through TryLLM with parse and, unless the LLM
// answered and parse accepted the answer, runs heuristic. It returns the
// output and the reason the LLM was not used ("" when it was, or when c is
// nil), which the caller reports as the output's fallback_reason. The
// error is ctx's, when it ended: the output is then no use.
func LLMFirst[O any](ctx context.Context, emit agents.Emitter, c Completer, system, user string,
	parse func(answer string) (O, error), heuristic func() O) (O, string, error) {
	var out O
	ok, reason := TryLLM(ctx, emit, c, system, user, func(answer string) error {
		var err error
		out, err = parse(answer)
		return err
	})
	if err := ctx.Err(); err != nil {
		var zero O
		return zero, "", err
	}
	if !ok {
		out = heuristic()
	}
	return out, reason, nil
}
