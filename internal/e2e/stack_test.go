package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/internal/stacktest"
	"github.com/agentbus/agentbus/orchestrator"
)

// deadline bounds every wait in these tests; nothing sleeps.
const deadline = 60 * time.Second

// stack is one test's embedded NATS server with a sleep and echo worker and an
// orchestrator, and a gateway that the test can stop and start again on
// the same port, as an operator restarting it would (internal/stacktest).
type stack struct {
	*stacktest.Stack
	t   *testing.T
	env *bustest.Env
}

// stackOptions adjust startStackWith: agents served beside sleep and echo,
// and a change to the gateway's configuration (tokens, say), applied at
// every start.
type stackOptions struct {
	agents       []agents.Agent
	gateway      func(*gateway.Config)
	worker       func(*agents.WorkerConfig)
	orchestrator func(*orchestrator.Config)
}

func startStack(t *testing.T) *stack { return startStackWith(t, stackOptions{}) }

func startStackWith(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	return startStackOn(t, bustest.New(t), opts)
}

// startStackOn is startStackWith on a given NATS server.
func startStackOn(t *testing.T, env *bustest.Env, opts stackOptions) *stack {
	t.Helper()
	st := stacktest.StartOn(t, env, stacktest.Options{Agents: append([]agents.Agent{sleep.Agent{}}, opts.agents...),
		Gateway: true, GatewayConfig: opts.gateway, WorkerConfig: opts.worker, OrchestratorConfig: opts.orchestrator})
	return &stack{Stack: st, t: t, env: env}
}

func (s *stack) stopGateway()    { s.StopGateway() }
func (s *stack) restartGateway() { s.RestartGateway() }

func (s *stack) base() string { return s.URL() }

// submitSleeps submits a workflow of n sleep steps of ms each, in a chain,
// and returns its id.
func (s *stack) submitSleeps(ctx context.Context, id string, n int, ms int) error {
	return s.submitSleepsAs(ctx, gateway.DefaultTenant, id, n, ms)
}

// submitSleepsAs is submitSleeps for a tenant (auth is off: the tenant
// header names it).
func (s *stack) submitSleepsAs(ctx context.Context, tenant, id string, n int, ms int) error {
	var steps []map[string]any
	for i := range n {
		st := map[string]any{"id": fmt.Sprintf("s%d", i), "capability": sleep.Capability, "input": map[string]int{"ms": ms}}
		if i > 0 {
			st["depends_on"] = []string{fmt.Sprintf("s%d", i-1)}
		}
		steps = append(steps, st)
	}
	body, _ := json.Marshal(map[string]any{"workflow_id": id, "plan": map[string]any{"steps": steps}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base()+"/v1/workflows", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(gateway.TenantHeader, tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return fmt.Errorf("submit: %s: %s", resp.Status, b.String())
	}
	return nil
}

// event is one stored client event: its offset and short type.
type event struct {
	Offset uint64 `json:"offset"`
	Type   string `json:"type"`
}

// stored reads the workflow's events straight from JetStream, up to its
// terminal one: what every client must have received, exactly once.
func (s *stack) stored(ctx context.Context, workflow string) ([]event, error) {
	return s.storedAs(ctx, gateway.DefaultTenant, workflow)
}

// storedAs is stored for a tenant's workflow.
func (s *stack) storedAs(ctx context.Context, tenant, workflow string) ([]event, error) {
	var out []event
	err := s.env.Bus.Follow(ctx, tenant, workflow, 0, func(_ context.Context, r bus.Record) error {
		out = append(out, event{Offset: r.Offset, Type: r.Envelope.Type.Short()})
		if r.Envelope.Type.Terminal() {
			return bus.ErrStop
		}
		return nil
	})
	return out, err
}
