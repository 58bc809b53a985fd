package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// The idempotency bucket records keys.
var _ api.Claims = (*bus.KV)(nil)

func TestValidIdempotencyKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key string
		ok  bool
	}{
		{"order-1234", true},
		{"0190c3a2-7f4e-7c1a-9f0e-1b2c3d4e5f60", true},
		{"a", true},
		{"b64+/AB==", true},
		{"user:42.retry~1_x", true},
		{strings.Repeat("k", 255), true},
		{"", false},
		{strings.Repeat("k", 256), false},
		{"has space", false},
		{"tab\t", false},
		{"ünïcode", false},
		{"semi;colon", false},
		{"quote\"", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			t.Parallel()
			err := api.ValidIdempotencyKey(tt.key)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidIdempotencyKey(%q) = %v, want ok %v", tt.key, err, tt.ok)
			}
			if err != nil && !errors.Is(err, api.ErrInvalidKey) {
				t.Errorf("error %v does not wrap ErrInvalidKey", err)
			}
		})
	}
}

// TestRequestHashIsOfTheNormalisedRequest: spacing, key order and fields
// left at their defaults are no part of the hash; every field is.
func TestRequestHashIsOfTheNormalisedRequest(t *testing.T) {
	t.Parallel()
	hash := func(t *testing.T, body string) string {
		t.Helper()
		var r api.SubmitRequest
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		return api.RequestHash(r.WorkflowID, r.Submitted())
	}
	base := hash(t, `{"query":"q","metadata":{"a":"1","b":"2"}}`)
	for _, same := range []string{
		`{ "metadata" : {"b":"2", "a":"1"}, "query" : "q" }`,
		`{"query":"q","metadata":{"a":"1","b":"2"},"priority":0}`,
	} {
		if got := hash(t, same); got != base {
			t.Errorf("%s hashes apart from the same request", same)
		}
	}
	for _, other := range []string{
		`{"query":"q2","metadata":{"a":"1","b":"2"}}`,
		`{"query":"q","metadata":{"a":"1"}}`,
		`{"query":"q","metadata":{"a":"1","b":"2"},"priority":5}`,
		`{"query":"q","metadata":{"a":"1","b":"2"},"workflow_id":"w1"}`,
		`{"query":"q","metadata":{"a":"1","b":"2"},"session_id":"s1"}`,
	} {
		if got := hash(t, other); got == base {
			t.Errorf("%s hashes as the base request", other)
		}
	}
	sub := events.WorkflowSubmitted{Query: "q"}
	other := sub
	other.User = "ada"
	if api.RequestHash("", sub) == api.RequestHash("", other) {
		t.Error("the user is no part of the hash")
	}
}

// memClaims is Claims in memory, counting claims; fail makes the next
// claim fail.
type memClaims struct {
	mu     sync.Mutex
	m      map[string][]byte
	claims int
}

func (c *memClaims) Claimed(_ context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key], nil
}

func (c *memClaims) Claim(_ context.Context, key string, value []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claims++
	if held, ok := c.m[key]; ok {
		return held, nil
	}
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[key] = value
	return nil, nil
}

// failing is a Publisher whose first n publishes fail.
type failing struct {
	mu    sync.Mutex
	n     int
	calls []string
}

func (f *failing) Publish(_ context.Context, _ string, env events.Envelope, _ string) (struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, env.WorkflowID)
	if len(f.calls) <= f.n {
		return struct{}{}, errors.New("no responders")
	}
	return struct{}{}, nil
}

// TestSubmitOnce covers the decisions of SubmitOnce with an in-memory
// store: what is published, claimed and answered.
func TestSubmitOnce(t *testing.T) {
	t.Parallel()
	sub := events.WorkflowSubmitted{Query: "q"}
	none := func(context.Context, string) (bool, error) { return false, nil }

	t.Run("same key twice: one workflow, the second a replay", func(t *testing.T) {
		t.Parallel()
		var p failing
		c := &memClaims{}
		o := api.Once{Key: "k1", Claims: c, Exists: none}
		first, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "", sub)
		if err != nil || first.Replayed {
			t.Fatalf("first = %+v, %v", first, err)
		}
		// Recorded by now: the replay publishes nothing.
		o.Exists = func(_ context.Context, wf string) (bool, error) { return wf == first.WorkflowID, nil }
		second, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "", sub)
		if err != nil || !second.Replayed || second.WorkflowID != first.WorkflowID {
			t.Fatalf("second = %+v, %v; want a replay of %s", second, err, first.WorkflowID)
		}
		if len(p.calls) != 1 {
			t.Errorf("published %d times, want 1", len(p.calls))
		}
	})

	t.Run("another request with the key is refused naming it", func(t *testing.T) {
		t.Parallel()
		var p failing
		o := api.Once{Key: "k1", Claims: &memClaims{}, Exists: none}
		first, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "", sub)
		if err != nil {
			t.Fatal(err)
		}
		_, err = api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "", events.WorkflowSubmitted{Query: "other"})
		var re *api.KeyReusedError
		if !errors.As(err, &re) || re.Key != "k1" || re.Workflow != first.WorkflowID || !errors.Is(err, api.ErrKeyReused) {
			t.Fatalf("err = %v, want a *KeyReusedError naming k1 and %s", err, first.WorkflowID)
		}
		if len(p.calls) != 1 {
			t.Errorf("published %d times, want 1", len(p.calls))
		}
	})

	t.Run("keys are per tenant", func(t *testing.T) {
		t.Parallel()
		var p failing
		o := api.Once{Key: "k1", Claims: &memClaims{}, Exists: none}
		a, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "", sub)
		if err != nil {
			t.Fatal(err)
		}
		b, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "beta", "", sub)
		if err != nil || b.Replayed || b.WorkflowID == a.WorkflowID {
			t.Fatalf("beta's = %+v, %v: want a workflow of its own", b, err)
		}
	})

	t.Run("a failed publish stays claimed and the next try publishes it", func(t *testing.T) {
		t.Parallel()
		p := failing{n: 1}
		o := api.Once{Key: "k1", Claims: &memClaims{}, Exists: none}
		_, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "", sub)
		var se *api.StoreError
		if !errors.As(err, &se) {
			t.Fatalf("err = %v, want a *StoreError", err)
		}
		again, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "", sub)
		if err != nil || !again.Replayed || again.WorkflowID != se.Workflow {
			t.Fatalf("again = %+v, %v; want %s published again", again, err, se.Workflow)
		}
		if len(p.calls) != 2 || p.calls[1] != se.Workflow {
			t.Errorf("published %q, want %s twice", p.calls, se.Workflow)
		}
	})

	t.Run("refused by Admit: nothing claimed or published", func(t *testing.T) {
		t.Parallel()
		var p failing
		c := &memClaims{}
		refused := &api.QuotaError{Tenant: "acme", Quota: api.Quota{Name: api.QuotaRunning, Limit: 1, Current: 1}}
		o := api.Once{Key: "k1", Claims: c, Exists: none, Admit: func(context.Context) (func(), error) { return nil, refused }}
		_, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "", sub)
		if !errors.Is(err, api.ErrQuotaExceeded) {
			t.Fatalf("err = %v, want the quota error", err)
		}
		if c.claims != 0 || len(p.calls) != 0 {
			t.Errorf("claimed %d, published %d; want nothing", c.claims, len(p.calls))
		}
	})

	t.Run("a lost claim race is a replay and Admit is undone", func(t *testing.T) {
		t.Parallel()
		var p failing
		c := &memClaims{}
		undone := 0
		o := api.Once{Key: "k1", Claims: c, Exists: none, Admit: func(context.Context) (func(), error) { return func() { undone++ }, nil }}
		// Another gateway claimed the key between the look-up and the claim.
		rk, _ := subjects.IdempotencyKey("acme", "k1")
		winner, _ := json.Marshal(api.IdempotencyRecord{WorkflowID: "w-first", RequestHash: api.RequestHash("", sub)})
		racing := &racingClaims{memClaims: c, key: rk, value: winner}
		o.Claims = racing
		got, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "", sub)
		if err != nil || !got.Replayed || got.WorkflowID != "w-first" {
			t.Fatalf("got %+v, %v; want a replay of w-first", got, err)
		}
		if undone != 1 {
			t.Errorf("Admit undone %d times, want 1", undone)
		}
	})

	t.Run("a taken workflow id is refused before anything is claimed", func(t *testing.T) {
		t.Parallel()
		var p failing
		c := &memClaims{}
		o := api.Once{Key: "k1", Claims: c, Exists: func(context.Context, string) (bool, error) { return true, nil }}
		_, err := api.SubmitOnce(testCtx(t), &p, o, "/t", "acme", "w1", sub)
		if !errors.Is(err, api.ErrWorkflowExists) || c.claims != 0 || len(p.calls) != 0 {
			t.Fatalf("err = %v, claims %d, publishes %d; want ErrWorkflowExists and nothing stored", err, c.claims, len(p.calls))
		}
	})

	t.Run("an invalid key is refused", func(t *testing.T) {
		t.Parallel()
		var p failing
		_, err := api.SubmitOnce(testCtx(t), &p, api.Once{Key: "a b", Claims: &memClaims{}}, "/t", "acme", "", sub)
		if !errors.Is(err, api.ErrInvalidKey) || len(p.calls) != 0 {
			t.Fatalf("err = %v, publishes %d", err, len(p.calls))
		}
	})
}

// racingClaims is memClaims whose look-up misses key and whose claim of
// it finds value there: a claim that lost a race.
type racingClaims struct {
	*memClaims
	key   string
	value []byte
}

func (r *racingClaims) Claim(ctx context.Context, key string, value []byte) ([]byte, error) {
	if key == r.key {
		return r.value, nil
	}
	return r.memClaims.Claim(ctx, key, value)
}

// TestSubmitOnceConcurrentOnARealBucket: 20 submissions with one key at
// once, on a real server and bucket, store one submission and answer one
// workflow, all but one as replays.
func TestSubmitOnceConcurrentOnARealBucket(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	kv, err := env.Bus.Idempotency(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	sub := events.WorkflowSubmitted{Query: "once"}
	o := api.Once{Key: "order-1", Claims: kv, Exists: func(context.Context, string) (bool, error) { return false, nil }}
	const n = 20
	var wg sync.WaitGroup
	ids := make([]string, n)
	replays := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := api.SubmitOnce(testCtx(t), env.Bus, o, "/t", "acme", "", sub)
			ids[i], replays[i], errs[i] = r.WorkflowID, r.Replayed, err
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("submission %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Errorf("submission %d answered %s, the first %s", i, ids[i], ids[0])
		}
		if !replays[i] {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d answers were not replays, want 1", fresh)
	}
	stream, err := env.Bus.JetStream().Stream(testCtx(t), subjects.StreamWorkflows)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("%s holds %d submissions, want 1", subjects.StreamWorkflows, info.State.Msgs)
	}
	rk, _ := subjects.IdempotencyKey("acme", "order-1")
	held, err := kv.Claimed(testCtx(t), rk)
	if err != nil {
		t.Fatal(err)
	}
	var rec api.IdempotencyRecord
	if err := json.Unmarshal(held, &rec); err != nil || rec.WorkflowID != ids[0] || rec.RequestHash != api.RequestHash("", sub) || rec.CreatedAt.IsZero() {
		t.Errorf("record %s (%v), want workflow %s and the request's hash", held, err, ids[0])
	}
}

// TestClaimDelivered is the orchestrator's check of a bare publish with
// NATSIdempotencyHeader.
func TestClaimDelivered(t *testing.T) {
	t.Parallel()
	c := &memClaims{}
	sub := events.WorkflowSubmitted{Query: "q"}
	steps := []struct {
		name, workflow string
		sub            events.WorkflowSubmitted
		wantFirst      string
		wantReused     bool
	}{
		{"a new key starts its workflow", "w1", sub, "", false},
		{"a redelivery of the same workflow starts it", "w1", sub, "", false},
		{"the same request as another workflow is a duplicate of the first", "w2", sub, "w1", false},
		{"another request with the key is refused", "w3", events.WorkflowSubmitted{Query: "other"}, "", true},
	}
	for _, s := range steps {
		first, err := api.ClaimDelivered(testCtx(t), c, "acme", "k1", s.workflow, s.sub)
		var re *api.KeyReusedError
		if s.wantReused {
			if !errors.As(err, &re) || re.Workflow != "w1" {
				t.Errorf("%s: err = %v, want a *KeyReusedError naming w1", s.name, err)
			}
			continue
		}
		if err != nil || first != s.wantFirst {
			t.Errorf("%s: ClaimDelivered = %q, %v; want %q", s.name, first, err, s.wantFirst)
		}
	}
	if _, err := api.ClaimDelivered(testCtx(t), c, "acme", "bad key", "w9", sub); !errors.Is(err, api.ErrInvalidKey) {
		t.Errorf("a bad key: %v, want ErrInvalidKey", err)
	}
}
