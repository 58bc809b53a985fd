package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/coder/websocket"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// followers is how many workflow followers the gateway's bus runs: none
// needs a consumer (consumers says so).
func followers(t testing.TB, s *stack) int {
	t.Helper()
	if n := consumers(t, s); n != 0 {
		t.Fatalf("%d consumers on the events stream: a follower made one", n)
	}
	return s.env.Bus.Following()
}

// consumers is how many consumers the events stream has.
func consumers(t testing.TB, s *stack) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	str, err := s.env.Bus.JetStream().Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	return str.CachedInfo().State.Consumers
}

// until polls cond until it holds, failing the test at the deadline.
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("no %s within %s", what, deadline)
		}
		<-tick.C
	}
}

// TestHubSharesOneFollower: live subscribers of one workflow, over
// WebSocket and SSE, replay on their own followers and then share the
// workflow's hub — one follower of the workflow — and every one of
// them still gets every event exactly once, in order, to the terminal one.
//
// The WebSocket side runs with a write delay, so frames are written in
// gathered batches.
func TestHubSharesOneFollower(t *testing.T) {
	s := startGateway(t, bustest.New(t), func(c *gateway.Config) { c.WS.WriteDelay = 5 * time.Millisecond })
	bareWorkflow(t, s.env, "wf", "working")
	var want []uint64
	for i := range 5 {
		want = append(want, mustPublish(t, s.env, "wf", i, false))
	}
	const nWS, nSSE = 12, 4
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var mu sync.Mutex
	var got [][]uint64
	var wg sync.WaitGroup
	for range nWS {
		c := s.mustDialWS(t, "/v1/workflows/wf/ws")
		wg.Go(func() {
			st, err := readWS(ctx, c, nil)
			if err == nil && st.CloseCode() != websocket.StatusNormalClosure {
				err = fmt.Errorf("closed with %v", st.End)
			}
			_, _, evs, cerr := checkWS(st.Frames)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || cerr != nil {
				t.Errorf("ws: %v %v", err, cerr)
			}
			got = append(got, wsOffsets(evs))
		})
	}
	for range nSSE {
		wg.Go(func() {
			_, fs, err := s.follow(ctx, "/v1/workflows/wf/events")
			var offs []uint64
			for _, f := range fs {
				offs = append(offs, f.Offset)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("sse: %v", err)
			}
			got = append(got, offs)
		})
	}
	// Every subscriber has replayed the five events and joined the hub:
	// its own follower is gone, the hub's remains.
	until(t, "single shared follower", func() bool {
		return followers(t, s) == 1 && s.metric(t, "agentbus_gateway_hubs") == 1 &&
			s.metric(t, `agentbus_gateway_frames_sent_total{kind="ws"}`) == nWS*5 &&
			s.metric(t, `agentbus_gateway_frames_sent_total{kind="sse"}`) == nSSE*5
	})
	for i := 5; i < 40; i++ {
		want = append(want, mustPublish(t, s.env, "wf", i, i == 39))
	}
	wg.Wait()
	if len(got) != nWS+nSSE {
		t.Fatalf("%d streams, want %d", len(got), nWS+nSSE)
	}
	for i, g := range got {
		if fmt.Sprint(g) != fmt.Sprint(want) {
			t.Fatalf("stream %d: offsets %v, want %v", i, g, want)
		}
	}
	// The hub ended with the workflow.
	until(t, "hub gone", func() bool { return followers(t, s) == 0 && s.metric(t, "agentbus_gateway_hubs") == 0 })
}

// TestHubLingersThenStops: a hub outlives its last subscriber by
// ws.Config.HubLinger, so that a reconnecting client finds it, and then
// stops with its follower.
func TestHubLingersThenStops(t *testing.T) {
	s := startGateway(t, bustest.New(t), func(c *gateway.Config) { c.WS.HubLinger = 50 * time.Millisecond })
	bareWorkflow(t, s.env, "wf", "working")
	first := mustPublish(t, s.env, "wf", 0, false)
	c := s.mustDialWS(t, "/v1/workflows/wf/ws")
	until(t, "joined hub", func() bool {
		return followers(t, s) == 1 && s.metric(t, `agentbus_gateway_frames_sent_total{kind="ws"}`) == 1
	})
	_ = c.Close(websocket.StatusNormalClosure, "bye")
	until(t, "hub stopped", func() bool { return followers(t, s) == 0 && s.metric(t, "agentbus_gateway_hubs") == 0 })

	// A new subscriber after the stop starts a new hub and misses nothing.
	second := mustPublish(t, s.env, "wf", 1, false)
	c = s.mustDialWS(t, fmt.Sprintf("/v1/workflows/wf/ws?from=%d", first))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var offs []uint64
	done := make(chan error, 1)
	go func() {
		_, err := readWS(ctx, c, func(f wsFrame) error {
			if f.Offset > 0 {
				offs = append(offs, f.Offset)
			}
			return nil
		})
		done <- err
	}()
	last := mustPublish(t, s.env, "wf", 2, true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(offs) != fmt.Sprint([]uint64{second, last}) {
		t.Fatalf("offsets %v, want [%d %d]", offs, second, last)
	}
}

// TestHubServesA2AStreams: A2A streams (tasks/resubscribe) read through the
// same hub as WebSocket subscribers: several of them on a running task are
// one follower of the workflow, and each still ends with the task's
// final status.
func TestHubServesA2AStreams(t *testing.T) {
	s, c := startA2A(t)
	ctx := ctxT(t)
	res, err := c.SendMessage(ctx, nonBlocking(planMessage(sleepPlan(60_000))))
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2a.Task).ID
	const streams = 3
	var wg sync.WaitGroup
	finals := make(chan a2a.TaskState, streams)
	for range streams {
		wg.Go(func() {
			evs, err := drain(c.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: id}), nil)
			if err != nil {
				t.Errorf("resubscribe: %v after %s", err, describe(evs))
				return
			}
			if last, ok := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent); ok && last.Final {
				finals <- last.Status.State
			}
		})
	}
	// The streams leave one follower: the hub's.
	until(t, "A2A streams on the hub", func() bool {
		return followers(t, s) == 1 && s.metric(t, "agentbus_gateway_hubs") == 1
	})
	if _, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: id}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(finals)
	n := 0
	for st := range finals {
		if st != a2a.TaskStateCanceled {
			t.Errorf("final state %s, want canceled", st)
		}
		n++
	}
	if n != streams {
		t.Fatalf("%d streams ended with a final status, want %d", n, streams)
	}
}

// TestHubFailureClosesItsStreams: when a hub's event stream fails (here
// its gateway's NATS connection closes under it), the streams that joined
// it are closed, so that their clients resume from their offsets
// elsewhere, instead of waiting for events that will never come.
func TestHubFailureClosesItsStreams(t *testing.T) {
	env := bustest.New(t)
	own := bustest.Connect(t, env)
	s := startGateway(t, env, func(c *gateway.Config) { c.Bus = own })
	bareWorkflow(t, env, "wf", "working")
	mustPublish(t, env, "wf", 0, false)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	done := make(chan stream, 1)
	go func() {
		st, _ := s.readSSE(ctx, "/v1/workflows/wf/events", func(sseFrame, []string) error { return nil })
		done <- st
	}()
	until(t, "joined the hub", func() bool {
		return consumers(t, s) == 0 && own.Following() == 1 && s.metric(t, "agentbus_gateway_hubs") == 1 &&
			s.metric(t, `agentbus_gateway_frames_sent_total{kind="sse"}`) == 1
	})
	own.Close()
	select {
	case st := <-done:
		if n := len(st.Frames); n == 0 || terminal(st.Frames[n-1].Event) {
			t.Fatalf("the stream closed after %s, want it cut short after the first event", summary(st.Frames))
		}
	case <-ctx.Done():
		t.Fatal("the stream of a failed hub stayed open")
	}
}
