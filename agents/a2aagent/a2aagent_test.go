package a2aagent_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentbus/agentbus/agents/a2aagent"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
)

// TestRemoteSkillsRunAPlan: a remote agent's two skills appear in the
// registry as two healthy capabilities, and a plan that uses both (the
// second depending on the first) completes with each skill's output, each
// run once on the remote agent; a streamed skill's status updates and
// artifact chunks are the step's progress and artifact events. Both ways
// of calling: message/stream (the card says it streams) and message/send
// with tasks/get.
func TestRemoteSkillsRunAPlan(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			a := startAgent(t, streaming)
			s := startStack(t, a)
			if got := s.remote.Capabilities(); !slices.Equal(got, []string{"ext_text_shout", "ext_count"}) {
				t.Fatalf("capabilities %v", got)
			}
			for _, c := range s.remote.Capabilities() {
				waitFor(t, c+" healthy in the registry", func() (bool, string) {
					in := s.health(t, c)
					return len(in) == 1 && in[0].Health == discovery.Healthy, fmt.Sprint(in)
				})
			}
			shout := s.health(t, "ext_text_shout")[0]
			if !strings.Contains(shout.Description, "Upper-cases a text.") || !slices.Equal(shout.Examples, []string{"shout hello"}) {
				t.Fatalf("registration of ext_text_shout: description %q, examples %v", shout.Description, shout.Examples)
			}

			s.submit(t, "plan", step("a", "ext_text_shout", "hello"), step("b", "ext_count", map[string]any{"from": "a"}, "a"))
			rs := s.follow(t, "plan")
			end := rs[len(rs)-1].Envelope
			if end.Type != events.TypeComplete {
				t.Fatalf("workflow ended %s:%s", end.Type.Short(), describe(rs))
			}
			var c events.Complete
			if err := end.Unmarshal(&c); err != nil {
				t.Fatal(err)
			}
			outA, outB := output(t, c.Outputs["a"]), output(t, c.Outputs["b"])
			if outA.Text != "HELLO" || outA.State != "completed" || outA.Skill != "text.shout" || outA.Agent != "Test Agent" || len(outA.Artifacts) != 1 {
				t.Fatalf("output of a: %s", c.Outputs["a"])
			}
			if outB.Text != "123" || outB.State != "completed" || outB.TaskID == "" {
				t.Fatalf("output of b: %s", c.Outputs["b"])
			}
			if a.runsOf("text.shout") != 1 || a.runsOf("count") != 1 {
				t.Fatalf("runs on the remote agent: shout %d, count %d; want 1 each", a.runsOf("text.shout"), a.runsOf("count"))
			}
			// b's message carried its input and a's output.
			var data map[string]any
			for _, p := range a.messageOf("count").Parts {
				if dp, ok := p.(a2a.DataPart); ok {
					data = dp.Data
				}
			}
			deps, _ := data["dependency_outputs"].(map[string]any)
			depA, _ := deps["a"].(map[string]any)
			if in, _ := data["input"].(map[string]any); in["from"] != "a" || depA["text"] != "HELLO" {
				t.Fatalf("count's data part: %v", data)
			}
			if !streaming {
				return
			}
			var percents []float64
			var chunks []string
			for _, r := range rs {
				switch {
				case r.Envelope.StepID != "b":
				case r.Envelope.Type == events.TypeProgress:
					var p events.Progress
					_ = r.Envelope.Unmarshal(&p)
					if strings.Contains(p.Message, "counting") {
						percents = append(percents, p.Percent)
					}
				case r.Envelope.Type == events.TypeArtifact:
					var art events.Artifact
					_ = r.Envelope.Unmarshal(&art)
					var text string
					_ = json.Unmarshal(art.Data, &text)
					if art.Name != "count" {
						continue // the step's output, as the runtime publishes it
					}
					chunks = append(chunks, fmt.Sprintf("%s/%s/%v/%v", art.Name, text, art.Append, art.LastChunk))
				}
			}
			if !slices.Equal(percents, []float64{25, 50, 75}) {
				t.Fatalf("progress of b: %v%s", percents, describe(rs))
			}
			if want := []string{"count/1/false/false", "count/2/true/false", "count/3/true/true"}; !slices.Equal(chunks, want) {
				t.Fatalf("artifacts of b: %v, want %v", chunks, want)
			}
		})
	}
}

// TestCancelReachesRemoteTask: canceling a workflow while its step runs on
// the remote agent sends tasks/cancel for that task, and the workflow ends
// canceled.
func TestCancelReachesRemoteTask(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			a := startAgent(t, streaming)
			s := startStack(t, a)
			s.submit(t, "held", step("a", "ext_count", map[string]any{"hold": true}))
			var task a2a.TaskID
			waitFor(t, "the held count to start", func() (bool, string) {
				select {
				case task = <-a.started:
					return true, ""
				default:
					return false, "not started"
				}
			})
			s.cancel(t, "held")
			waitFor(t, "tasks/cancel on the remote agent", func() (bool, string) {
				select {
				case got := <-a.canceled:
					if got != task {
						t.Fatalf("canceled task %s, want %s", got, task)
					}
					return true, ""
				default:
					return false, "no cancel"
				}
			})
			rs := s.follow(t, "held")
			if end := rs[len(rs)-1].Envelope; end.Type != events.TypeCancelled {
				t.Fatalf("workflow ended %s:%s", end.Type.Short(), describe(rs))
			}
			if n := a.runsOf("count"); n != 1 {
				t.Fatalf("count ran %d times", n)
			}
		})
	}
}

// TestCardDownMakesSkillsUnhealthy: once the agent stops answering, every
// skill reads unhealthy in the registry with the reason, and a step fails
// with a clear retryable error instead of hanging.
func TestCardDownMakesSkillsUnhealthy(t *testing.T) {
	a := startAgent(t, true)
	s := startStack(t, a)
	waitFor(t, "healthy", func() (bool, string) {
		in := s.health(t, "ext_count")
		return len(in) == 1 && in[0].Health == discovery.Healthy, fmt.Sprint(in)
	})
	a.srv.Close()
	for _, c := range s.remote.Capabilities() {
		waitFor(t, c+" unhealthy", func() (bool, string) {
			in := s.health(t, c)
			return len(in) == 1 && in[0].Health == discovery.Unhealthy && strings.Contains(in[0].HealthError, "did not answer"), fmt.Sprint(in)
		})
	}
	s.submit(t, "down", step("a", "ext_text_shout", "hello"))
	rs := s.follow(t, "down")
	end := rs[len(rs)-1].Envelope
	var e events.Error
	if err := end.Unmarshal(&e); err != nil || end.Type != events.TypeError {
		t.Fatalf("workflow ended %s:%s", end.Type.Short(), describe(rs))
	}
	t.Logf("error: %+v", e)
	if msg := fmt.Sprint(e); !strings.Contains(msg, "remote agent unavailable") || !strings.Contains(msg, "delivery 2 of 2") {
		t.Fatalf("error %s: want the unavailable agent named, after retries", msg)
	}
}

func output(t *testing.T, raw json.RawMessage) a2aagent.Output {
	t.Helper()
	var o a2aagent.Output
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("output %s: %v", raw, err)
	}
	return o
}

// TestCardDownStopsCallsInFlight: a step waiting on the remote agent when
// its card stops answering is stopped with ErrUnavailable (its remote task
// canceled) rather than left to hang until the step timeout; its retry
// fails at once while the card is down.
func TestCardDownStopsCallsInFlight(t *testing.T) {
	a := startAgent(t, true)
	s := startStack(t, a)
	s.submit(t, "stuck", step("a", "ext_count", map[string]any{"hold": true}))
	waitFor(t, "the held count to start", func() (bool, string) {
		select {
		case <-a.started:
			return true, ""
		default:
			return false, "not started"
		}
	})
	a.cardDown.Store(true)
	rs := s.follow(t, "stuck")
	end := rs[len(rs)-1].Envelope
	var e events.Error
	if err := end.Unmarshal(&e); err != nil || end.Type != events.TypeError {
		t.Fatalf("workflow ended %s:%s", end.Type.Short(), describe(rs))
	}
	if !strings.Contains(e.Message, "remote agent unavailable") || !strings.Contains(e.Message, "503") {
		t.Fatalf("error %q: want the card's 503 named", e.Message)
	}
	select {
	case <-a.canceled:
	default:
		t.Fatal("the stopped call's remote task was not canceled")
	}
}
