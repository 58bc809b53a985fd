package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// workflowsOf lists tenant's checkpoints: the workflows an orchestrator
// recorded.
func (s *stack) workflowsOf(t testing.TB, tenant string) []string {
	t.Helper()
	kv, err := s.env.Bus.KV(ctxT(t), subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	es, err := kv.ListMatching(ctxT(t), tenant+".*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, strings.TrimPrefix(e.Key, tenant+"."))
	}
	return out
}

// TestIdempotentSubmit: the same key and body twice is one workflow, the
// second answer the first's with Idempotent-Replayed; another body with
// the key is 409 naming it; another tenant's key is its own.
func TestIdempotentSubmit(t *testing.T) {
	s := startStack(t)
	body := []byte(`{"query": "once, please", "metadata": {"order": "1234"}}`)
	first := s.mustDo(t, http.MethodPost, "/v1/workflows", body, api.IdempotencyHeader, "order-1234")
	if first.Status != http.StatusAccepted || first.Header.Get(api.ReplayedHeader) != "" {
		t.Fatalf("first: %d %s %q, want 202 without %s", first.Status, first.Body, first.Header.Get(api.ReplayedHeader), api.ReplayedHeader)
	}
	var a, b submitted
	if err := json.Unmarshal(first.Body, &a); err != nil {
		t.Fatal(err)
	}
	// The same request, spaced and ordered otherwise.
	again := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"metadata":{"order":"1234"},"query":"once, please"}`),
		api.IdempotencyHeader, "order-1234")
	if again.Status != http.StatusAccepted || again.Header.Get(api.ReplayedHeader) != "true" {
		t.Fatalf("again: %d %s, %s %q; want 202 and %s: true", again.Status, again.Body, api.ReplayedHeader, again.Header.Get(api.ReplayedHeader), api.ReplayedHeader)
	}
	if err := json.Unmarshal(again.Body, &b); err != nil {
		t.Fatal(err)
	}
	if b != a {
		t.Errorf("the replay answered %+v, the first %+v", b, a)
	}
	if b.Status != api.StatusAccepted {
		t.Errorf("the replay's status is %q: the workflow was recorded by then", b.Status)
	}

	other := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query": "something else"}`), api.IdempotencyHeader, "order-1234")
	if other.Status != http.StatusConflict {
		t.Fatalf("another body with the key: %d %s, want 409", other.Status, other.Body)
	}
	var e apiErr
	if err := json.Unmarshal(other.Body, &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Code != "idempotency_key_reused" || !strings.Contains(e.Error.Message, `"order-1234"`) || !strings.Contains(e.Error.Message, a.WorkflowID) ||
		len(e.Error.Problems) != 1 || e.Error.Problems[0].In != "header" || e.Error.Problems[0].Name != api.IdempotencyHeader {
		t.Errorf("409 body %s: want code idempotency_key_reused naming the key, its workflow and the header", other.Body)
	}

	beta := s.mustDo(t, http.MethodPost, "/v1/workflows", body, api.IdempotencyHeader, "order-1234", api.TenantHeader, "beta")
	var c submitted
	if err := json.Unmarshal(beta.Body, &c); err != nil || beta.Status != http.StatusAccepted || beta.Header.Get(api.ReplayedHeader) != "" || c.WorkflowID == a.WorkflowID {
		t.Errorf("another tenant with the key: %d %s, want a new workflow of its own", beta.Status, beta.Body)
	}
	if got := s.workflowsOf(t, "default"); len(got) != 1 || got[0] != a.WorkflowID {
		t.Errorf("tenant default's workflows = %q, want only %s", got, a.WorkflowID)
	}
}

// TestIdempotentSubmitConcurrent: 20 identical submissions with one key at
// once start one workflow; every answer names it, one of them fresh.
func TestIdempotentSubmitConcurrent(t *testing.T) {
	s := startStack(t)
	const n = 20
	replies := make([]reply, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i], errs[i] = s.do(ctxT(t), http.MethodPost, "/v1/workflows", []byte(`{"query": "at once"}`), api.IdempotencyHeader, "burst-1")
		}()
	}
	wg.Wait()
	ids := map[string]int{}
	fresh := 0
	for i, r := range replies {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if r.Status != http.StatusAccepted {
			t.Fatalf("submission %d: %d %s", i, r.Status, r.Body)
		}
		var sub submitted
		if err := json.Unmarshal(r.Body, &sub); err != nil {
			t.Fatal(err)
		}
		ids[sub.WorkflowID]++
		if r.Header.Get(api.ReplayedHeader) != "true" {
			fresh++
		}
	}
	if len(ids) != 1 || fresh != 1 {
		t.Fatalf("answers named workflows %v with %d fresh; want one workflow, one fresh answer", ids, fresh)
	}
	if got := s.workflowsOf(t, "default"); len(got) != 1 {
		t.Errorf("tenant default has workflows %q, want one", got)
	}
}

// TestIdempotencyKeyRefusals: a malformed key is 400 naming the header,
// and nothing is submitted.
func TestIdempotencyKeyRefusals(t *testing.T) {
	s := startGateway(t, bustest.New(t))
	for _, tc := range []struct {
		name   string
		header []string
	}{
		{"empty", []string{api.IdempotencyHeader, ""}},
		{"a space", []string{api.IdempotencyHeader, "order 1"}},
		{"too long", []string{api.IdempotencyHeader, strings.Repeat("k", 256)}},
		{"not ASCII", []string{api.IdempotencyHeader, "clé"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"q"}`), tc.header...)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("%d %s, want 400", r.Status, r.Body)
			}
			var e apiErr
			if err := json.Unmarshal(r.Body, &e); err != nil || len(e.Error.Problems) != 1 ||
				e.Error.Problems[0].In != "header" || e.Error.Problems[0].Name != api.IdempotencyHeader {
				t.Errorf("body %s: want one problem in header %s", r.Body, api.IdempotencyHeader)
			}
		})
	}
	t.Run("sent twice", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, s.base+"/v1/workflows", strings.NewReader(`{"query":"q"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Add(api.IdempotencyHeader, "a")
		req.Header.Add(api.IdempotencyHeader, "b")
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("two keys: %d, want 400", resp.StatusCode)
		}
	})
	if n := storedSubmissions(t, s, "default"); n != 0 {
		t.Errorf("%d submissions stored, want none", n)
	}
}

// TestA2AIdempotentSend: message/send with the same Idempotency-Key and
// message twice answers one task.
func TestA2AIdempotentSend(t *testing.T) {
	s := startStack(t)
	send := func(text string) rpcReply {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{"configuration":{"blocking":false},` +
			`"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"` + text + `"}]}}}`
		r := s.mustDo(t, http.MethodPost, "/a2a", []byte(body), api.IdempotencyHeader, "a2a-key-1")
		var rr rpcReply
		if err := json.Unmarshal(r.Body, &rr); err != nil {
			t.Fatalf("%d %s: %v", r.Status, r.Body, err)
		}
		return rr
	}
	taskID := func(rr rpcReply) string {
		t.Helper()
		var task struct {
			ID string `json:"id"`
		}
		if rr.Error != nil || json.Unmarshal(rr.Result, &task) != nil || task.ID == "" {
			t.Fatalf("message/send: %+v %s", rr.Error, rr.Result)
		}
		return task.ID
	}
	first, second := taskID(send("hello")), taskID(send("hello"))
	if first != second {
		t.Errorf("the same message with the same key started tasks %s and %s", first, second)
	}
	other := send("bye")
	if other.Error == nil || other.Error.Code != -32600 || !strings.Contains(other.Error.Data.Error, "a2a-key-1") {
		t.Errorf("another message with the key: %+v, want an invalid request naming the key", other.Error)
	}
	if got := s.workflowsOf(t, "default"); len(got) != 1 {
		t.Errorf("tenant default has workflows %q, want one", got)
	}
}

// TestREADMEIdempotency runs the README's idempotency block with sh and
// curl against a gateway, and checks what it prints.
func TestREADMEIdempotency(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme-test: idempotency -->\n```sh\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no sh block marked readme-test: idempotency")
	}
	s := startStack(t)
	cmd := exec.CommandContext(ctxT(t), "sh", "-e", "-c", string(m[1]))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "AGENTBUS_URL="+s.base)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's idempotency block: %v\n%s", err, out)
	}
	for _, want := range []string{`"status": "accepted"`, "Idempotent-Replayed: true", `"code": "idempotency_key_reused"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the block printed no %s:\n%s", want, out)
		}
	}
	ids := regexp.MustCompile(`"workflow_id": "([^"]+)"`).FindAllStringSubmatch(string(out), -1)
	if len(ids) != 2 || ids[0][1] != ids[1][1] {
		t.Errorf("want the same workflow_id twice, got %q:\n%s", ids, out)
	}
	if got := s.workflowsOf(t, "default"); len(got) != 1 {
		t.Errorf("tenant default has workflows %q, want one", got)
	}
}

// storedSubmissions counts tenant's submissions in AGENTBUS_WORKFLOWS.
func storedSubmissions(t testing.TB, s *stack, tenant string) uint64 {
	t.Helper()
	subj, _ := subjects.Submit(tenant)
	n, err := s.env.Bus.Stored(context.Background(), subjects.StreamWorkflows, subj)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
