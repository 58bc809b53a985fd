package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/internal/stacktest"
)

// deadline bounds every wait; nothing sleeps.
const deadline = 60 * time.Second

// stack is a test's agentbus with an echo and sleep worker and a gateway
// that can be restarted on its port.
type stack struct{ *stacktest.Stack }

func startStack(t *testing.T) *stack {
	t.Helper()
	return &stack{stacktest.Start(t, stacktest.Options{Agents: []agents.Agent{sleep.Agent{}}, Gateway: true})}
}

func (s *stack) client(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{URL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	t.Cleanup(cancel)
	return ctx
}
