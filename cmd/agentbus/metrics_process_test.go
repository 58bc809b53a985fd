package main

import (
	"regexp"
	"testing"
)

var (
	orchestratorMetricsLine = regexp.MustCompile(`msg="agentbus orchestrator ready".* metrics=(\S+)`)
	workerMetricsLine       = regexp.MustCompile(`msg="agentbus worker ready".* metrics=(\S+)`)
)

// TestRolesServeMetrics starts `agentbus orchestrator --metrics-addr
// 127.0.0.1:0` and `agentbus worker --metrics-addr 127.0.0.1:0` beside a
// serve, runs one workflow whose step only that worker serves, and reads
// the three /metrics pages: the worker counted the step, and the two
// orchestrators together counted the workflow once, whichever handled it.
func TestRolesServeMetrics(t *testing.T) {
	c := startCluster(t)
	orch := startProc(t, "orchestrator", "--nats", c.natsURL, "--metrics-addr", "127.0.0.1:0")
	orchURL := orch.waitLine(t, orchestratorMetricsLine)[1]
	worker := startProc(t, "worker", "--nats", c.natsURL, "--capabilities", "sleep", "--heartbeat", "200ms", "--metrics-addr", "127.0.0.1:0")
	workerURL := worker.waitLine(t, workerMetricsLine)[1]

	wf := c.submitSleep(t, 1, 0)
	completedOnce(t, c.follow(t, wf))

	w := scrape(t, workerURL)
	if diff := compareSeries(w, map[string]float64{
		`agentbus_worker_step_duration_seconds_count{capability="sleep",outcome="completed"}`: 1,
		`agentbus_worker_queue_wait_seconds_count{capability="sleep"}`:                        1,
		`agentbus_worker_dead_letters_total{capability="sleep"}`:                              0,
	}); diff != "" {
		t.Errorf("worker %s:%s", workerURL, diff)
	}
	o, s := scrape(t, orchURL), scrape(t, c.httpURL+"/metrics")
	for _, series := range []string{
		`agentbus_orchestrator_workflows_started_total{tenant="default"}`,
		`agentbus_orchestrator_workflows_finished_total{outcome="completed",tenant="default"}`,
		`agentbus_orchestrator_steps_finished_total{capability="sleep",outcome="completed"}`,
	} {
		k := canonical(series)
		if n := o[k] + s[k]; n != 1 {
			t.Errorf("%s: orchestrator %v + serve %v, want 1 in all", series, o[k], s[k])
		}
	}
	for url, page := range map[string]map[string]float64{orchURL: o, workerURL: w, c.httpURL + "/metrics": s} {
		if _, ok := page["go_goroutines"]; !ok {
			t.Errorf("%s: no go_goroutines", url)
		}
	}
	if _, ok := s[`agentbus_gateway_http_requests_in_flight`]; !ok {
		t.Error("serve's /metrics lost the gateway's own metrics")
	}
	if _, ok := o[`agentbus_registry_instances{health="healthy"}`]; !ok {
		t.Error("the orchestrator's /metrics has no registry instances")
	}
}
