package llm

import (
	"context"
	"maps"
	"sync"
)

// Spent is what a run's model calls reported: tokens and calls.
type Spent struct {
	PromptTokens, CompletionTokens, Calls int64
	// Models holds the tokens by model, for the calls that named one.
	Models map[string]int64
}

// meter sums what the model calls of one run spend.
type meter struct {
	mu sync.Mutex
	s  Spent
}

type meterKey struct{}

// WithMeter returns a context whose model calls (every Chat call records
// its tokens) are summed, and the function that reads the sum: a worker
// wraps each step's run in one, and the step's reply carries the sum.
func WithMeter(ctx context.Context) (context.Context, func() Spent) {
	m := &meter{}
	return context.WithValue(ctx, meterKey{}, m), func() Spent {
		m.mu.Lock()
		defer m.mu.Unlock()
		s := m.s
		s.Models = maps.Clone(m.s.Models)
		return s
	}
}

// Meter records one model call's tokens in ctx's meter, if it has one,
// without naming the model (MeterModel names it).
func Meter(ctx context.Context, prompt, completion int64) { MeterModel(ctx, "", prompt, completion) }

// MeterModel records one call of a model and its tokens in ctx's meter,
// if it has one: Chat does for its calls; an agent that calls a model
// another way does for its own, naming the model as its tenants' token
// limits name it (--token-limit). Safe for concurrent use.
func MeterModel(ctx context.Context, model string, prompt, completion int64) {
	m, _ := ctx.Value(meterKey{}).(*meter)
	if m == nil {
		return
	}
	m.mu.Lock()
	m.s.PromptTokens += prompt
	m.s.CompletionTokens += completion
	m.s.Calls++
	if model != "" {
		if m.s.Models == nil {
			m.s.Models = map[string]int64{}
		}
		m.s.Models[model] += prompt + completion
	}
	m.mu.Unlock()
}
