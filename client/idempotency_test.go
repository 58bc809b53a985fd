package client_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/internal/stacktest"
)

// TestSubmitWithIdempotencyKey: over HTTP and over NATS, a second Submit
// with the key answers the first's workflow, Replayed; another submission
// with the key is a 409 naming it; and the two transports share keys.
func TestSubmitWithIdempotencyKey(t *testing.T) {
	s := startStack(t)
	httpc := s.client(t)
	natsc, err := client.NewNATS(s.Env.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer natsc.Close()
	for _, tc := range []struct {
		name string
		c    *client.Client
		key  string
	}{{"http", httpc, "sdk-http-1"}, {"nats", natsc, "sdk-nats-1"}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := timeout(t)
			sub := client.Submission{Query: "once over " + tc.name}
			first, err := tc.c.Submit(ctx, sub, client.WithIdempotencyKey(tc.key))
			if err != nil || first.Replayed {
				t.Fatalf("first: %+v, %v", first, err)
			}
			second, err := tc.c.Submit(ctx, sub, client.WithIdempotencyKey(tc.key))
			if err != nil || !second.Replayed || second.WorkflowID != first.WorkflowID {
				t.Fatalf("second: %+v, %v; want a replay of %s", second, err, first.WorkflowID)
			}
			_, err = tc.c.Submit(ctx, client.Submission{Query: "something else"}, client.WithIdempotencyKey(tc.key))
			var ae *client.APIError
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict || ae.Code != "idempotency_key_reused" ||
				len(ae.Problems) != 1 || ae.Problems[0].Name != api.IdempotencyHeader {
				t.Fatalf("another submission with the key: %v, want 409 idempotency_key_reused naming the header", err)
			}
			if _, err := tc.c.Wait(ctx, first.WorkflowID); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A key first sent over HTTP is the same key over NATS.
	ctx := timeout(t)
	first, err := httpc.Submit(ctx, client.Submission{Query: "shared"}, client.WithIdempotencyKey("shared-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := natsc.Submit(ctx, client.Submission{Query: "shared"}, client.WithIdempotencyKey("shared-1"))
	if err != nil || !again.Replayed || again.WorkflowID != first.WorkflowID {
		t.Errorf("over NATS after HTTP: %+v, %v; want a replay of %s", again, err, first.WorkflowID)
	}
	if _, err := httpc.Submit(ctx, client.Submission{Query: "q"}, client.WithIdempotencyKey("not a key")); !errors.Is(err, api.ErrInvalidKey) {
		t.Errorf("a malformed key: %v, want ErrInvalidKey before anything is sent", err)
	}
}

// TestSubmitOverQuota: a gateway's 429 is an *APIError with the quota and
// Retry-After.
func TestSubmitOverQuota(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Gateway: true, GatewayConfig: func(c *gateway.Config) {
		c.Quotas = gateway.QuotaConfig{Default: gateway.Limits{QueuedSteps: 1}}
	}})
	step := "agentbus.default.step.nobody"
	if _, err := s.Env.Bus.JetStream().Publish(timeout(t), step, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{URL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Ask(timeout(t), "one too many")
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusTooManyRequests || ae.Code != "quota_exceeded" || ae.RetryAfter != "5" ||
		ae.Quota == nil || *ae.Quota != (api.Quota{Name: api.QuotaQueuedSteps, Limit: 1, Current: 1}) {
		t.Fatalf("Ask over the quota: %#v, want a 429 naming queued_steps", err)
	}
}
