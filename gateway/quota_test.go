package gateway_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// quotaErr is the body of a 429 quota_exceeded answer.
type quotaErr struct {
	Error struct {
		Code    string    `json:"code"`
		Message string    `json:"message"`
		Quota   api.Quota `json:"quota"`
	} `json:"error"`
}

// mustRefuse checks that r is 429 quota_exceeded for the quota want, with
// Retry-After.
func mustRefuse(t testing.TB, r reply, want api.Quota) {
	t.Helper()
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("%d %s, want 429", r.Status, r.Body)
	}
	if ra := r.Header.Get("Retry-After"); ra != "5" {
		t.Errorf("Retry-After %q, want 5", ra)
	}
	var e quotaErr
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Code != "quota_exceeded" || e.Error.Quota != want || e.Error.Message == "" {
		t.Errorf("body %s: want quota_exceeded with quota %+v", r.Body, want)
	}
}

// quotaGateway is a gateway with quotas and no orchestrator: submissions
// stay stored, running until one takes them. ttl is the count cache's.
func quotaGateway(t *testing.T, q gateway.QuotaConfig) *stack {
	t.Helper()
	return startGateway(t, bustest.New(t), func(c *gateway.Config) {
		c.Quotas = q
		c.AcceptTimeout = time.Millisecond
	})
}

func ptr(n int64) *int64 { return &n }

// TestQuotaRunning: past the running quota a submission is 429 naming the
// quota, and nothing of it is stored; a replay of an earlier key is still
// answered; a tenant with its own quota has it. Both with the count cache
// (this gateway's admissions counted) and without (every count read from
// the bus).
func TestQuotaRunning(t *testing.T) {
	for _, ttl := range []time.Duration{0, -1} {
		t.Run(fmt.Sprintf("cache %v", ttl), func(t *testing.T) {
			s := quotaGateway(t, gateway.QuotaConfig{Default: gateway.Limits{Running: 2}, CacheTTL: ttl,
				Tenants: map[string]gateway.TenantLimits{"vip": {Running: ptr(0)}}})
			for i := range 2 {
				r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(fmt.Sprintf(`{"query":"q%d"}`, i)), api.IdempotencyHeader, fmt.Sprintf("k%d", i))
				if r.Status != http.StatusAccepted {
					t.Fatalf("submission %d: %d %s", i, r.Status, r.Body)
				}
			}
			r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"one too many"}`), api.IdempotencyHeader, "k-over")
			mustRefuse(t, r, api.Quota{Name: api.QuotaRunning, Limit: 2, Current: 2})
			if n := storedSubmissions(t, s, "default"); n != 2 {
				t.Errorf("%d submissions stored, want 2", n)
			}
			if held := claimed(t, s, "default", "k-over"); held {
				t.Error("the refused submission's key was recorded")
			}
			// A replay starts nothing: it is answered at the quota too.
			again := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"q0"}`), api.IdempotencyHeader, "k0")
			if again.Status != http.StatusAccepted || again.Header.Get(api.ReplayedHeader) != "true" {
				t.Errorf("a replay at the quota: %d %s", again.Status, again.Body)
			}
			for i := range 3 {
				r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"vip"}`), api.TenantHeader, "vip")
				if r.Status != http.StatusAccepted {
					t.Fatalf("vip's submission %d (no quota): %d %s", i, r.Status, r.Body)
				}
			}
		})
	}
}

// TestQuotaRunningCountsEndedWorkflowsOut: with an orchestrator and echo,
// ended workflows do not count, so submissions one after another pass a
// quota of 1 once the one before has ended.
func TestQuotaRunningCountsEndedWorkflowsOut(t *testing.T) {
	s := startStack(t, func(c *gateway.Config) {
		c.Quotas = gateway.QuotaConfig{Default: gateway.Limits{Running: 1}, CacheTTL: -1}
	})
	for i := range 3 {
		sub := s.mustSubmit(t, map[string]any{"query": fmt.Sprintf("q%d", i)})
		_, frames := s.mustFollow(t, sub.EventsURL+"?from=0")
		if last := frames[len(frames)-1]; last.Type != "complete" {
			t.Fatalf("workflow %d ended with %s", i, last.Type)
		}
	}
}

// TestQuotaQueuedSteps: the tenant's stored steps (AGENTBUS_STEPS) and its
// steps waiting for admission (AGENTBUS_QUEUE) count; at the quota a
// submission is 429 and nothing is stored.
func TestQuotaQueuedSteps(t *testing.T) {
	env := bustest.New(t)
	s := startGateway(t, env, func(c *gateway.Config) {
		c.Quotas = gateway.QuotaConfig{Default: gateway.Limits{QueuedSteps: 3}}
		c.AcceptTimeout = time.Millisecond
	})
	js := env.Bus.JetStream()
	step, _ := subjects.Step("default", "nobody")
	for range 2 {
		if _, err := js.Publish(ctxT(t), step, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	other, _ := subjects.Step("beta", "nobody")
	if _, err := js.Publish(ctxT(t), other, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"two steps queued"}`)); r.Status != http.StatusAccepted {
		t.Fatalf("under the quota: %d %s", r.Status, r.Body)
	}
	if err := env.Bus.EnsureQueue(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	queued, _ := subjects.Queue("default", "nobody", 3)
	if _, err := js.Publish(ctxT(t), queued, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// The count is cached for a second: wait it out rather than sleep.
	deadline := time.Now().Add(5 * time.Second)
	var r reply
	for time.Now().Before(deadline) {
		if r = s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"three steps queued"}`)); r.Status != http.StatusAccepted {
			break
		}
	}
	mustRefuse(t, r, api.Quota{Name: api.QuotaQueuedSteps, Limit: 3, Current: 3})
	before := storedSubmissions(t, s, "default")
	r = s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"again"}`))
	mustRefuse(t, r, api.Quota{Name: api.QuotaQueuedSteps, Limit: 3, Current: 3})
	if after := storedSubmissions(t, s, "default"); after != before {
		t.Errorf("a refused submission was stored: %d submissions, then %d", before, after)
	}
	if r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"beta"}`), api.TenantHeader, "beta"); r.Status != http.StatusAccepted {
		t.Errorf("another tenant: %d %s", r.Status, r.Body)
	}
}

// TestQuotaUploadBytes: an upload that would take the tenant past its
// upload quota is 429 naming the bytes, and none of its files stay
// stored; at the quota an upload is refused before it is read.
func TestQuotaUploadBytes(t *testing.T) {
	env := bustest.New(t)
	s := startGateway(t, env, func(c *gateway.Config) {
		c.Quotas = gateway.QuotaConfig{Default: gateway.Limits{UploadBytes: 100}}
		c.AcceptTimeout = time.Millisecond
	})
	upload := func(files ...[2]string) reply {
		t.Helper()
		body, ct := multipartBody(t, files, nil)
		return s.mustDo(t, http.MethodPost, "/v1/documents", body, "Content-Type", ct)
	}
	sixty := strings.Repeat("x", 60)
	if r := upload([2]string{"a.md", sixty}); r.Status != http.StatusAccepted {
		t.Fatalf("first upload: %d %s", r.Status, r.Body)
	}
	r := upload([2]string{"b.md", sixty[:30]}, [2]string{"c.md", sixty[:30]})
	mustRefuse(t, r, api.Quota{Name: api.QuotaUploadBytes, Limit: 100, Current: 60, Requested: 60})
	names, err := env.Bus.ListUploads(ctxT(t), "default")
	if err != nil || len(names) != 1 {
		t.Errorf("uploads stored: %q (%v), want the first one's file only", names, err)
	}
	if r := upload([2]string{"d.md", sixty[:40]}); r.Status != http.StatusAccepted {
		t.Fatalf("an upload that fits: %d %s", r.Status, r.Body)
	}
	r = upload([2]string{"e.md", "x"})
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("at the quota: %d %s, want 429", r.Status, r.Body)
	}
	if names, _ := env.Bus.ListUploads(ctxT(t), "default"); len(names) != 2 {
		t.Errorf("uploads stored: %q, want two", names)
	}
}

// TestQuotaRunningRefusesAnUpload: an upload's ingest workflow counts
// against the running quota; refused, its files are removed.
func TestQuotaRunningRefusesAnUpload(t *testing.T) {
	env := bustest.New(t)
	s := startGateway(t, env, func(c *gateway.Config) {
		c.Quotas = gateway.QuotaConfig{Default: gateway.Limits{Running: 1}}
		c.AcceptTimeout = time.Millisecond
	})
	if r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"q"}`)); r.Status != http.StatusAccepted {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	body, ct := multipartBody(t, [][2]string{{"a.md", "# A"}}, nil)
	r := s.mustDo(t, http.MethodPost, "/v1/documents", body, "Content-Type", ct)
	mustRefuse(t, r, api.Quota{Name: api.QuotaRunning, Limit: 1, Current: 1})
	if names, _ := env.Bus.ListUploads(ctxT(t), "default"); len(names) != 0 {
		t.Errorf("the refused upload's files stayed: %q", names)
	}
}

// TestA2AQuota: a new A2A task past the running quota is a JSON-RPC
// error naming the quota.
func TestA2AQuota(t *testing.T) {
	s := quotaGateway(t, gateway.QuotaConfig{Default: gateway.Limits{Running: 1}})
	send := func(id string) []byte {
		body := `{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{"configuration":{"blocking":false},` +
			`"message":{"kind":"message","messageId":"` + id + `","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
		return s.mustDo(t, http.MethodPost, "/a2a", []byte(body)).Body
	}
	if b := send("m1"); strings.Contains(string(b), `"error"`) {
		t.Fatalf("first task: %s", b)
	}
	var rr struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				Quota      api.Quota `json:"quota"`
				RetryAfter int       `json:"retry_after"`
			} `json:"data"`
		} `json:"error"`
	}
	b := send("m2")
	if err := json.Unmarshal(b, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Error.Code != -32029 || rr.Error.Data.Quota != (api.Quota{Name: api.QuotaRunning, Limit: 1, Current: 1}) || rr.Error.Data.RetryAfter != 5 {
		t.Errorf("second task: %s, want error -32029 naming the running quota", b)
	}
	if n := storedSubmissions(t, s, "default"); n != 1 {
		t.Errorf("%d submissions stored, want 1", n)
	}
}

// claimed reports whether tenant's idempotency key is recorded.
func claimed(t testing.TB, s *stack, tenant, key string) bool {
	t.Helper()
	kv, err := s.env.Bus.Idempotency(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	rk, _ := subjects.IdempotencyKey(tenant, key)
	held, err := kv.Claimed(ctxT(t), rk)
	if err != nil {
		t.Fatal(err)
	}
	return held != nil
}

func TestParseQuotas(t *testing.T) {
	got, err := gateway.ParseQuotas([]byte(`{"acme": {"running": 10, "upload_bytes": 0}, "beta": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := gateway.QuotaConfig{Default: gateway.Limits{Running: 1, QueuedSteps: 2, UploadBytes: 3}, Tenants: got}
	for tenant, want := range map[string]gateway.Limits{
		"acme":  {Running: 10, QueuedSteps: 2, UploadBytes: 0},
		"beta":  {Running: 1, QueuedSteps: 2, UploadBytes: 3},
		"other": {Running: 1, QueuedSteps: 2, UploadBytes: 3},
	} {
		if l := c.Limits(tenant); l != want {
			t.Errorf("Limits(%s) = %+v, want %+v", tenant, l, want)
		}
	}
	for _, bad := range []string{`[]`, `{"Acme": {}}`, `{"acme": {"running": -1}}`, `{"acme": {"runing": 1}}`, `{"acme": {"running": 1.5}}`} {
		_, err := gateway.ParseQuotas([]byte(bad))
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("ParseQuotas(%s) = %v, want a *schemas.ValidationError", bad, err)
		}
	}
	if err := (gateway.QuotaConfig{Default: gateway.Limits{Running: -1}}).Validate(); err == nil {
		t.Error("a negative default validated")
	}
}
