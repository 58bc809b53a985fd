package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// A submission that meets a submissions stream with no leader (here: no
// stream at all for a moment, which answers the same "no responders") is
// sent again with its dedup id until the stream answers, inside the
// request: the client sees 202, never the election, and the workflow
// runs once.
func TestSubmissionWaitsOutAnElection(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := s.env.Bus.JetStream().DeleteStream(ctx, subjects.StreamWorkflows); err != nil {
		t.Fatal(err)
	}
	back := make(chan error, 1)
	time.AfterFunc(time.Second, func() { back <- s.env.Bus.Provision(ctx, bus.StreamsConfig{}) })
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "through-election", "plan": plan("a:echo")})
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	// The orchestrators' consumer went with the stream and is made again
	// by their next pull, which may come after AcceptTimeout on a busy
	// machine (the answer then says "queued"): wait for the workflow.
	awaitState(t, s, "through-election")
	_, frames := s.mustFollow(t, sub.EventsURL)
	if last := frames[len(frames)-1]; last.Type != "complete" {
		t.Fatalf("ended with %s", last.Type)
	}
}

// Past StoreTimeout the answer is 503 with Retry-After, saying that the
// same workflow_id may be sent again; sent again once the stream is
// back, it is accepted and runs.
func TestSubmissionPastStoreTimeoutIs503(t *testing.T) {
	t.Parallel()
	s := startStack(t, func(c *gateway.Config) { c.StoreTimeout = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := s.env.Bus.JetStream().DeleteStream(ctx, subjects.StreamWorkflows); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"workflow_id": "after-503", "plan": plan("a:echo")})
	start := time.Now()
	r := s.mustDo(t, http.MethodPost, "/v1/workflows", body)
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != gateway.RetryAfterSeconds {
		t.Fatalf("status %d Retry-After %q: %s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("503 after %s: it did not wait out StoreTimeout", took)
	}
	if !strings.Contains(string(r.Body), `\"after-503\"`) || !strings.Contains(string(r.Body), "same workflow_id") {
		t.Errorf("the 503 does not say to send the same id again: %s", r.Body)
	}
	if err := s.env.Bus.Provision(ctx, bus.StreamsConfig{}); err != nil {
		t.Fatal(err)
	}
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "after-503", "plan": plan("a:echo")})
	awaitState(t, s, "after-503")
	_, frames := s.mustFollow(t, sub.EventsURL)
	if last := frames[len(frames)-1]; last.Type != "complete" {
		t.Fatalf("ended with %s", last.Type)
	}
}

// awaitState waits until GET /v1/workflows/{id} answers 200.
func awaitState(t *testing.T, s *stack, id string) {
	t.Helper()
	for end := time.Now().Add(deadline); ; {
		if r := s.mustDo(t, http.MethodGet, "/v1/workflows/"+id, nil); r.Status == http.StatusOK {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("workflow %s has no state within %s", id, deadline)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
