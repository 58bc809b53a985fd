package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// A hand an orchestrator refuses, or leaves unanswered past HandWait,
// is not lost: the answer goes through the replies stream and the step is
// acked once, its agent run once. The late verdict changes nothing.
func TestAnswerNotTakenGoesThroughTheStream(t *testing.T) {
	for _, c := range []struct {
		name    string
		verdict func(release <-chan struct{}) error
	}{
		{"refused", func(<-chan struct{}) error { return errors.New("not now") }},
		{"no verdict within HandWait", func(release <-chan struct{}) error { <-release; return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := bustest.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			release := make(chan struct{})
			defer close(release)
			tctx, tcancel := context.WithCancel(context.Background())
			taken := make(chan string, 4)
			go func() {
				_ = env.Bus.Take(tctx, bus.TakeConfig{Subject: subjects.AllResults, Queue: "stand-in", Concurrency: 4},
					func(_ context.Context, _ string, e events.Envelope) error {
						taken <- e.StepID
						if e.StepID != "s" {
							return nil // the probe
						}
						return c.verdict(release)
					})
			}()
			defer tcancel()
			waitFor(t, deadline, "the stand-in listening", func() (bool, string) {
				hctx, hcancel := context.WithTimeout(ctx, time.Second)
				defer hcancel()
				err := env.Bus.Hand(hctx, "agentbus.acme.result.probe", mustEnvelope(t))
				return !errors.Is(err, bus.ErrNoResponder), fmt.Sprint(err)
			})
			<-taken // the probe

			var calls counter
			a := newAgent("answer", func(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
				calls.add(req.StepID)
				return okOutput, nil
			})
			startWorker(t, agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{a}, AckWait: 2 * time.Second,
				HandWait: 200 * time.Millisecond, Logger: bustest.Logger(t)})
			requestAnswer(ctx, t, env.Bus, "s")
			select {
			case id := <-taken:
				if id != "s" {
					t.Fatalf("handed %q, want s", id)
				}
			case <-ctx.Done():
				t.Fatal("the worker never handed its answer")
			}
			waitFor(t, deadline, "the answer stored", func() (bool, string) {
				n := streamMsgs(t, env.Bus, subjects.StreamReplies)
				return n == 1, fmt.Sprintf("%d replies", n)
			})
			waitStreamEmpty(t, env.Bus, subjects.StreamSteps)
			// Past the step's AckWait: no redelivery, no second run.
			time.Sleep(2500 * time.Millisecond)
			if n := calls.snapshot()["s"]; n != 1 {
				t.Fatalf("the agent ran %d times, want once", n)
			}
			if n := streamMsgs(t, env.Bus, subjects.StreamReplies); n != 1 {
				t.Fatalf("%d replies stored, want 1", n)
			}
		})
	}
}

func mustEnvelope(t *testing.T) events.Envelope {
	t.Helper()
	e, err := events.New(events.TypeStatus, "probe", events.SourceOrchestrator, "acme", "probe", "",
		events.Status{State: events.StateWorking})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A hand that got no verdict in time pauses handing: the next step's
// answer goes straight through the stream, without waiting again.
func TestHandPausesAfterNoVerdict(t *testing.T) {
	env := bustest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	tctx, tcancel := context.WithCancel(context.Background())
	defer tcancel()
	taken := make(chan string, 8)
	go func() {
		_ = env.Bus.Take(tctx, bus.TakeConfig{Subject: subjects.AllResults, Queue: "stand-in", Concurrency: 4},
			func(_ context.Context, _ string, e events.Envelope) error {
				taken <- e.StepID
				if e.StepID == "" {
					return nil // the probe
				}
				<-release
				return nil
			})
	}()
	waitFor(t, deadline, "the stand-in listening", func() (bool, string) {
		hctx, hcancel := context.WithTimeout(ctx, time.Second)
		defer hcancel()
		err := env.Bus.Hand(hctx, "agentbus.acme.result.probe", mustEnvelope(t))
		return !errors.Is(err, bus.ErrNoResponder), fmt.Sprint(err)
	})
	<-taken
	a := newAgent("answer", func(context.Context, agents.Request, agents.Emitter) (json.RawMessage, error) {
		return okOutput, nil
	})
	startWorker(t, agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{a}, AckWait: 8 * time.Second,
		HandWait: 500 * time.Millisecond, Logger: bustest.Logger(t)})
	for i, id := range []string{"s1", "s2", "s3"} {
		start := time.Now()
		requestAnswer(ctx, t, env.Bus, id)
		waitFor(t, deadline, id+"'s answer stored", func() (bool, string) {
			n := streamMsgs(t, env.Bus, subjects.StreamReplies)
			return n == uint64(i+1), fmt.Sprintf("%d replies", n)
		})
		if took := time.Since(start); i > 0 && took >= 500*time.Millisecond {
			t.Errorf("%s answered in %s: it waited for a verdict again", id, took)
		}
	}
	var handed []string
	for more := true; more; {
		select {
		case id := <-taken:
			handed = append(handed, id)
		default:
			more = false
		}
	}
	if len(handed) != 1 || handed[0] != "s1" {
		t.Errorf("handed %v, want only s1 (handing paused after it got no verdict)", handed)
	}
}

// requestAnswer publishes step id of workflow "wf" of tenant acme,
// capability "answer", attempt 1.
func requestAnswer(ctx context.Context, t *testing.T, b *bus.Bus, id string) {
	t.Helper()
	subj, _ := subjects.Step("acme", "answer")
	key := events.StepKey("acme", "wf", id, 1)
	e, err := events.New(events.TypeStepRequested, key, events.SourceOrchestrator, "acme", "wf", id,
		events.StepRequested{StepID: id, Capability: "answer", Attempt: 1, Input: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(ctx, subj, e, key); err != nil {
		t.Fatal(err)
	}
}
