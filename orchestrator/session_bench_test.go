package orchestrator_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
)

// BenchmarkSessionTurn runs one-step workflows one after another without
// a session and as turns of one session (which loads the session at
// submit, resolves the query, carries the conversation in the step and
// appends the turn at the end), and reports the end-to-end latency
// percentiles of each: the cost of a conversation.
func BenchmarkSessionTurn(b *testing.B) {
	for _, session := range []string{"", "bench-session"} {
		name := "no-session"
		if session != "" {
			name = "session"
		}
		b.Run(name, func(b *testing.B) {
			s := startStack(b)
			p := chainPlan(1)
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				wf := fmt.Sprintf("turn-%d", i)
				start := time.Now()
				submit(b, s.env.Bus, "default", wf, events.WorkflowSubmitted{Query: "and what about its read lock?", Plan: p, SessionID: session})
				if end := last(b, collect(b, s.env.Bus, "default", wf)); end.Type != events.TypeComplete {
					b.Fatalf("workflow ended %s", end.Type)
				}
				took = append(took, time.Since(start))
			}
			reportPercentiles(b, took, "turn")
		})
	}
}
