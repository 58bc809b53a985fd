package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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
	// A model that answers nothing useful but reports its tokens: the
	// query_enhancement agent meters the call and falls back to its
	// heuristic, so a step spends 120 tokens on model "test-model".
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"test-model",`+
			`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"no json here"}}],`+
			`"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`)
	}))
	t.Cleanup(model.Close)
	c := startServeCluster(t, "--rate-limit", "metered/*=20", "--max-in-flight", "capped/sleep=2",
		"--capabilities", "query_enhancement", "--quotas", `{"quotaed":{"running":2}}`, "--llm-url", model.URL+"/v1", "--llm-model", "test-model",
		"--token-limit", "tokened/test-model=7200:120")
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
		// Two at a time, however many slots the workers have: n/2 rounds of a step.
		if want := time.Duration(n/limit*ms) * time.Millisecond * 9 / 10; took < want {
			t.Errorf("%d steps of %d ms, %d in flight at most, took %s on three nodes, want at least %s", n, ms, limit, took.Round(time.Millisecond), want)
		}
		t.Logf("%d steps of %d ms limited to %d in flight on three nodes: %s", n, ms, limit, took.Round(time.Millisecond))
	})

	clusterKeysQuotasBudgets(t, c, done)
}

// clusterKeysQuotasBudgets are TestServeClusterLimitsAndIdempotency's
// subtests for concurrency keys, quotas and budgets on three nodes.
func clusterKeysQuotasBudgets(t *testing.T, c *serveCluster, done *completions) {
	t.Run("concurrency key across nodes", func(t *testing.T) {
		const n, ms = 6, 150
		for i := range n {
			body := fmt.Sprintf(`{"workflow_id":"k%d","concurrency":{"key":"user-1"},"plan":{"steps":[{"id":"nap","capability":"sleep","input":{"ms":%d}}]}}`, i, ms)
			if code, _, _ := c.postTo(t, i, "default", body, nil); code != http.StatusAccepted {
				t.Fatalf("submit k%d: %d", i, code)
			}
		}
		eventually(t, 60*time.Second, "the keyed workflows complete", func() bool { return done.count("default") == n })
		type span struct {
			id         string
			start, end time.Time
		}
		var spans []span
		for i := range n {
			id := fmt.Sprintf("k%d", i)
			sp := span{id: id}
			steps := 0
			for _, f := range c.replay(t, id) {
				var st events.Status
				if f.Type != "status" || json.Unmarshal(f.Data, &st) != nil || st.StepID != "nap" {
					continue
				}
				switch st.State {
				case events.StateWorking:
					if sp.start.IsZero() {
						sp.start = f.Time
					}
				case events.StateCompleted:
					sp.end = f.Time
					steps++
				}
			}
			if steps != 1 || sp.start.IsZero() {
				t.Fatalf("%s: %d completed steps, started %v", id, steps, sp.start)
			}
			spans = append(spans, sp)
		}
		slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
		for i := 1; i < len(spans); i++ {
			if spans[i].start.Before(spans[i-1].end) {
				t.Errorf("%s started at %s, before %s ended at %s", spans[i].id, spans[i].start.Format(time.StampMilli),
					spans[i-1].id, spans[i-1].end.Format(time.StampMilli))
			}
		}
	})

	t.Run("quota across gateways", func(t *testing.T) {
		long := func(id string) string {
			return fmt.Sprintf(`{"workflow_id":%q,"plan":{"steps":[{"id":"nap","capability":"sleep","input":{"ms":4000}}]}}`, id)
		}
		for i := range 2 {
			if code, _, _ := c.postTo(t, i, "quotaed", long(fmt.Sprintf("q%d", i)), nil); code != http.StatusAccepted {
				t.Fatalf("submit q%d: %d", i, code)
			}
		}
		// Each gateway caches its counts for a second, so one may accept a
		// third (a quick echo) within that second; past it, every gateway
		// refuses while the two run.
		horizon := time.Now().Add(1500 * time.Millisecond)
		eventually(t, 10*time.Second, "every gateway refuses a third", func() bool {
			for i := range 3 {
				code, _, h := c.postTo(t, i, "quotaed", `{"plan":{"steps":[{"id":"e","capability":"echo","input":{}}]}}`, nil)
				if code == http.StatusAccepted && time.Now().After(horizon) {
					t.Errorf("n%d accepted a third running workflow over the quota of 2, past its cache's second", i+1)
					return true
				}
				if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
					return false
				}
			}
			return true
		})
		eventually(t, 30*time.Second, "the two complete", func() bool { return done.count("quotaed") >= 2 })
	})

	t.Run("token limit across orchestrators", func(t *testing.T) {
		// 120 tokens a second from a bucket of 120; each step spends 120.
		const n = 4
		think := func(id string) string {
			return fmt.Sprintf(`{"workflow_id":%q,"query":"what did Ada Lovelace write","plan":{"steps":[{"id":"a","capability":"query_enhancement"}]}}`, id)
		}
		if code, _, _ := c.postTo(t, 0, "tokened", think("t-first"), nil); code != http.StatusAccepted {
			t.Fatalf("submit: %d", code)
		}
		eventually(t, 30*time.Second, "the first completes", func() bool { return done.count("tokened") == 1 })
		start := time.Now()
		for i := range n {
			if code, _, _ := c.postTo(t, i, "tokened", think(fmt.Sprintf("t%d", i)), nil); code != http.StatusAccepted {
				t.Fatalf("submit t%d: %d", i, code)
			}
		}
		eventually(t, 60*time.Second, "the limited workflows complete", func() bool { return done.count("tokened") == n+1 })
		took := time.Since(start)
		// The bucket was empty: n steps of 120 tokens at 120 a second, less
		// one step's worth that may overdraw it.
		if want := time.Duration(n-1) * time.Second * 9 / 10; took < want {
			t.Errorf("%d steps of 120 tokens at 120 tokens/s took %s on three nodes, want at least %s", n, took.Round(time.Millisecond), want)
		}
		t.Logf("%d steps of 120 tokens at 120 tokens/s on three nodes: %s", n, took.Round(time.Millisecond))
	})

	t.Run("budget pauses, approve on another node", func(t *testing.T) {
		body := `{"workflow_id":"spender","query":"what did Ada Lovelace write","budget":{"tokens":100},` +
			`"plan":{"steps":[{"id":"a","capability":"query_enhancement"},{"id":"b","capability":"echo","depends_on":["a"],"input":{}}]}}`
		if code, _, _ := c.postTo(t, 0, "default", body, nil); code != http.StatusAccepted {
			t.Fatalf("submit: %d", code)
		}
		var state struct {
			Status string `json:"status"`
			Usage  struct {
				PromptTokens int64            `json:"prompt_tokens"`
				Models       map[string]int64 `json:"models"`
			} `json:"usage"`
		}
		var raw json.RawMessage
		deadline := time.Now().Add(30 * time.Second)
		for state.Status != string(events.StateInputRequired) {
			if time.Now().After(deadline) {
				t.Fatalf("the workflow did not wait for its budget within 30s: %s", raw)
			}
			time.Sleep(50 * time.Millisecond)
			getJSON(t, c.nodes[1].httpURL+"/v1/workflows/spender", &raw)
			_ = json.Unmarshal(raw, &state)
		}
		if state.Usage.PromptTokens != 100 || state.Usage.Models["test-model"] != 120 {
			t.Errorf("usage %+v, want 100 prompt tokens, 120 on test-model", state.Usage)
		}
		req, _ := http.NewRequest(http.MethodPost, c.nodes[2].httpURL+"/v1/workflows/spender/approve", strings.NewReader(`{"reason":"go on"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("approve on n3: %d", resp.StatusCode)
		}
		// The agent's own progress and artifacts are in the log too, so the
		// check is: it completed, each step once, offsets increasing.
		log := c.replay(t, "spender")
		done := map[string]int{}
		for i, f := range log {
			var st events.Status
			if f.Type == "status" && f.StepID != "" && json.Unmarshal(f.Data, &st) == nil && st.State == events.StateCompleted {
				done[f.StepID]++
			}
			if i > 0 && f.Offset <= log[i-1].Offset {
				t.Errorf("offset %d after %d", f.Offset, log[i-1].Offset)
			}
		}
		if log[len(log)-1].Type != "complete" || done["a"] != 1 || done["b"] != 1 {
			t.Errorf("spender ended %s with steps completed %v, want complete and a, b once each", log[len(log)-1].Type, done)
		}
	})
}
