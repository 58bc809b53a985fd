package kittest

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/llm"
)

// BadInput is a step input an agent must refuse as a permanent failure
// whose message contains Says (a JSON pointer, or the missing query).
type BadInput struct {
	Name, Input string
	// Query is the workflow's query.
	Query string
	Says  string
}

// CheckBadInputs runs each case through h, as a subtest, and fails it
// unless h refuses the step with agents.ErrPermanent naming Says.
func CheckBadInputs(t *testing.T, h agents.Handler, cases []BadInput) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			_, err := h.Handle(t.Context(), Step("s", tt.Input, tt.Query), &Recorder{})
			if !errors.Is(err, agents.ErrPermanent) || !strings.Contains(err.Error(), tt.Says) {
				t.Fatalf("err = %v, want ErrPermanent naming %q", err, tt.Says)
			}
		})
	}
}

// Fallback is an LLM failure an agent must survive with its heuristic: the
// ChatServer answers Status and Content, and the output's fallback reason
// must contain Says.
type Fallback struct {
	Name, Content, Says string
	Status              int
}

// CheckFallbacks runs step, as a subtest per case, against a ChatServer
// that fails as the case says. step runs the agent with the given LLM,
// checks what its heuristic alone decides, and returns the output's method
// and fallback reason and the Recorder; CheckFallbacks fails the case
// unless the method is "heuristic", the reason names the failure and a
// progress message says the heuristic was used.
func CheckFallbacks(t *testing.T, cases []Fallback, step func(t *testing.T, c *llm.Chat) (method, reason string, rec *Recorder)) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			c, _ := Chat(t, tt.Status, tt.Content)
			method, reason, rec := step(t, c)
			if method != agentkit.MethodHeuristic || !strings.Contains(reason, tt.Says) {
				t.Fatalf("method %q, fallback_reason %q, want heuristic naming %q", method, reason, tt.Says)
			}
			if !rec.Said("used the heuristic") {
				t.Fatalf("progress = %q, want a fallback message", rec.Messages())
			}
		})
	}
}
