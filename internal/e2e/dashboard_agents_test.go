package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/gateway"
)

// TestDashboardAgentsShowsQueuedSteps fills the sleep capability (8 slots,
// and flow control keeps 2×8+2 more requests waiting on its step subject)
// with acme's one-step workflows of a minute, so that the rest wait in
// acme's queue, and beta's few behind them: the Agents page shows acme's
// queued and in-flight steps of sleep, adding up to acme's workflows and
// none of beta's, waiting for a slot, as GET /v1/capabilities tells.
func TestDashboardAgentsShowsQueuedSteps(t *testing.T) {
	const acmeN, betaN = 40, 5
	// 8 slots (the default before November 2026), so that 40 steps fill
	// the window and some wait for admission.
	d := startDash(t, stackOptions{worker: func(c *agents.WorkerConfig) { c.Concurrency = 8 }}, acmeClient)
	nap := map[string]any{"id": "nap", "capability": "sleep", "input": map[string]int{"ms": 60_000}}
	for i := range acmeN {
		d.submitPlan(t, acmeClient, fmt.Sprintf("busy-%d", i), nap)
	}
	for i := range betaN {
		d.submitPlan(t, betaClient, fmt.Sprintf("behind-%d", i), nap)
	}
	// Every step dispatched — queued or on the step subject — for both.
	sleepOf := func(token string) gateway.Capability {
		var r gateway.CapabilitiesResponse
		if st := d.call(t, http.MethodGet, "/v1/capabilities", token, nil, &r); st != http.StatusOK {
			t.Fatalf("GET /v1/capabilities: %d", st)
		}
		for _, c := range r.Capabilities {
			if c.Capability == "sleep" {
				return c
			}
		}
		return gateway.Capability{}
	}
	var acme gateway.Capability
	waitUntil(t, "every step dispatched", func() bool {
		acme = sleepOf(acmeClient)
		beta := sleepOf(betaClient)
		return acme.Queued+acme.InFlight == acmeN && beta.Queued+beta.InFlight == betaN && acme.Queued > 0
	})
	if acme.Slots != 8 || acme.Idle != 0 || acme.Throttled {
		t.Errorf("acme's sleep %+v: want 8 slots, none idle, not throttled (a busy capability, no limit)", acme)
	}

	d.open(t, "/agents", `[data-testid="capabilities"] tr[data-capability="sleep"]`)
	row := `document.querySelector('[data-testid="capabilities"] tr[data-capability="sleep"]')`
	d.until(t, fmt.Sprintf(`(() => { const r = %s; return r.dataset.flow === 'waiting' &&
		parseInt(r.querySelector('[data-col="queued"]').textContent) + parseInt(r.querySelector('[data-col="in_flight"]').textContent) === %d })()`, row, acmeN))
	var shown struct {
		Queued, InFlight string
		Cols             int
	}
	d.eval(t, fmt.Sprintf(`(() => { const r = %s; return {Queued: r.querySelector('[data-col="queued"]').textContent,
		InFlight: r.querySelector('[data-col="in_flight"]').textContent, Cols: r.children.length} })()`, row), &shown)
	if shown.Queued == "0" || shown.Cols != 7 {
		t.Errorf("sleep's row shows %+v: want acme's queued steps in a row of 7 columns", shown)
	}
	d.shot(t, "agents-queued")
}

// waitUntil polls cond until it holds, failing the test after deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("not within %s: %s", deadline, what)
		}
		<-tick.C
	}
}
