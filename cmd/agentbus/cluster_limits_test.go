package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
)

// completions counts, on a cluster node's NATS, the workflows that
// complete, by tenant, and fails the test on one completing twice.
type completions struct {
	t    *testing.T
	mu   sync.Mutex
	seen map[string]bool
	n    map[string]int
}

func watchClusterCompletions(t *testing.T, natsURL string) *completions {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c := &completions{t: t, seen: map[string]bool{}, n: map[string]int{}}
	if _, err := nc.Subscribe("agentbus.*.events.*", func(m *nats.Msg) {
		if m.Header.Get(events.HeaderType) != string(events.TypeComplete) {
			return
		}
		tenant := m.Header.Get(events.HeaderTenant)
		key := tenant + "/" + m.Header.Get(events.HeaderWorkflow)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.seen[key] {
			t.Errorf("%s completed twice", key)
		}
		c.seen[key] = true
		c.n[tenant]++
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *completions) count(tenant string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.n[tenant] }

// postTo submits body for tenant to node i's gateway with extra headers
// and returns the status and the answer.
func (c *serveCluster) postTo(t *testing.T, i int, tenant, body string, header map[string]string) (int, api.SubmitResponse, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.nodes[i%3].httpURL+"/v1/workflows", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.TenantHeader, tenant)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("submit to n%d: %v", i%3+1, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out api.SubmitResponse
	_ = json.Unmarshal(raw, &out)
	if resp.StatusCode >= 500 {
		t.Logf("n%d answered %d: %s", i%3+1, resp.StatusCode, raw)
	}
	return resp.StatusCode, out, resp.Header
}

// TestServeClusterLimitsAndIdempotency: on three serve processes, a
// tenant's rate limit and in-flight limit hold across the three
// orchestrators and workers, and one idempotency key sent to every node at
// once gives one workflow.
func TestServeClusterLimitsAndIdempotency(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	c := startServeCluster(t, "--rate-limit", "metered/*=20", "--max-in-flight", "capped/sleep=2")
	done := watchClusterCompletions(t, c.nodes[0].natsURL)
	nap := func(id string, ms int) string {
		return fmt.Sprintf(`{"workflow_id":%q,"plan":{"steps":[{"id":"nap","capability":"sleep","input":{"ms":%d}}]}}`, id, ms)
	}

	t.Run("idempotency key on every node", func(t *testing.T) {
		body := `{"plan":{"steps":[{"id":"e","capability":"echo","input":{"n":1}}]}}`
		var wg sync.WaitGroup
		var mu sync.Mutex
		ids, fresh := map[string]bool{}, 0
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, sub, h := c.postTo(t, i, "idem", body, map[string]string{api.IdempotencyHeader: "order-7"})
				mu.Lock()
				defer mu.Unlock()
				if code != http.StatusAccepted {
					t.Errorf("submit %d: status %d", i, code)
					return
				}
				ids[sub.WorkflowID] = true
				if h.Get(api.ReplayedHeader) != "true" {
					fresh++
				}
			}()
		}
		wg.Wait()
		if len(ids) != 1 || fresh != 1 {
			t.Fatalf("12 submissions with one key on three nodes gave workflows %v, %d not replayed; want one workflow, one first answer", ids, fresh)
		}
		code, _, _ := c.postTo(t, 2, "idem", `{"query":"another"}`, map[string]string{api.IdempotencyHeader: "order-7"})
		if code != http.StatusConflict {
			t.Errorf("the same key with another body: status %d, want 409", code)
		}
		eventually(t, 30*time.Second, "the keyed workflow completes", func() bool { return done.count("idem") == 1 })
	})

	t.Run("rate limit across orchestrators", func(t *testing.T) {
		const n, rate = 40, 20.0
		start := time.Now()
		for i := range n {
			if code, _, _ := c.postTo(t, i, "metered", nap(fmt.Sprintf("m%d", i), 1), nil); code != http.StatusAccepted {
				t.Fatalf("submit m%d: %d", i, code)
			}
		}
		eventually(t, 60*time.Second, "the metered workflows complete", func() bool { return done.count("metered") == n })
		took := time.Since(start)
		if want := time.Duration(float64(n-2) / rate * float64(time.Second) * 0.9); took < want {
			t.Errorf("%d steps at %g/s took %s on three nodes, want at least %s", n, rate, took.Round(time.Millisecond), want)
		}
		t.Logf("%d steps at %g/s on three nodes: %s", n, rate, took.Round(time.Millisecond))
	})

	t.Run("in-flight limit across workers", func(t *testing.T) {
		const n, ms, limit = 12, 150, 2
		start := time.Now()
		for i := range n {
			if code, _, _ := c.postTo(t, i, "capped", nap(fmt.Sprintf("c%d", i), ms), nil); code != http.StatusAccepted {
				t.Fatalf("submit c%d: %d", i, code)
			}
		}
		eventually(t, 60*time.Second, "the capped workflows complete", func() bool { return done.count("capped") == n })
		took := time.Since(start)
		// Two at a time on 24 slots: n/2 rounds of a step.
		if want := time.Duration(n/limit*ms) * time.Millisecond * 9 / 10; took < want {
			t.Errorf("%d steps of %d ms, %d in flight at most, took %s on three nodes, want at least %s", n, ms, limit, took.Round(time.Millisecond), want)
		}
		t.Logf("%d steps of %d ms limited to %d in flight on three nodes: %s", n, ms, limit, took.Round(time.Millisecond))
	})
}
