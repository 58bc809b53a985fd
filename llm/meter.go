package llm

import (
	"context"
	"sync"
)

// Spent is what a run's model calls reported: tokens and calls.
type Spent struct {
	PromptTokens, CompletionTokens, Calls int64
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
		return m.s
	}
}

// Meter records one model call's tokens in ctx's meter, if it has one:
// Chat does for its calls; an agent that calls a model another way does
// for its own. Safe for concurrent use.
func Meter(ctx context.Context, prompt, completion int64) {
	m, _ := ctx.Value(meterKey{}).(*meter)
	if m == nil {
		return
	}
	m.mu.Lock()
	m.s.PromptTokens += prompt
	m.s.CompletionTokens += completion
	m.s.Calls++
	m.mu.Unlock()
}
