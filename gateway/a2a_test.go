package gateway_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/gateway"
)

func TestA2AAgentCard(t *testing.T) {
	s := startStackWith(t, sleep.Agent{})
	_, card := s.a2aClient(t)
	if card.Name != "agentbus" || card.URL != s.base+"/a2a" || card.PreferredTransport != a2a.TransportProtocolJSONRPC {
		t.Errorf("card name %q url %q transport %q", card.Name, card.URL, card.PreferredTransport)
	}
	if !card.Capabilities.Streaming || card.ProtocolVersion == "" || card.Version == "" || card.Description == "" {
		t.Errorf("card capabilities %+v protocol %q version %q", card.Capabilities, card.ProtocolVersion, card.Version)
	}
	if len(card.DefaultInputModes) == 0 || len(card.DefaultOutputModes) == 0 {
		t.Errorf("card modes in %v out %v", card.DefaultInputModes, card.DefaultOutputModes)
	}
	byID := map[string]a2a.AgentSkill{}
	for _, sk := range card.Skills {
		byID[sk.ID] = sk
	}
	want := map[string]a2a.AgentSkill{
		"echo":  {Description: "Returns its input", Examples: []string{"echo hello", "show me the data flow of this plan"}},
		"sleep": {Description: "Waits for the given number", Examples: []string{"wait for two seconds", "sleep 500 ms"}},
	}
	for id, w := range want {
		sk, ok := byID[id]
		if !ok {
			t.Errorf("no skill %q among %v", id, card.Skills)
			continue
		}
		if !strings.HasPrefix(sk.Description, w.Description) || !slices.Equal(sk.Examples, w.Examples) || sk.Name == "" {
			t.Errorf("skill %s: %+v", id, sk)
		}
	}
}

func TestA2ASendBlocking(t *testing.T) {
	s, c := startA2A(t)
	ctx := ctxT(t)
	res, err := c.SendMessage(ctx, textMessage("hello agents"))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("result is %T, want a task", res)
	}
	if task.Status.State != a2a.TaskStateCompleted || task.ContextID != string(task.ID) || len(task.Artifacts) != 1 {
		t.Fatalf("task %s state %s context %q artifacts %d", task.ID, task.Status.State, task.ContextID, len(task.Artifacts))
	}
	if got := fmt.Sprint(resultData(t, task.Artifacts[0])); !strings.Contains(got, "hello agents") {
		t.Errorf("result %s does not echo the query", got)
	}
	if len(task.History) == 0 || task.History[0].Role != a2a.MessageRoleUser ||
		task.History[0].Parts[0].(a2a.TextPart).Text != "hello agents" {
		t.Errorf("history %+v", task.History)
	}
	// The same task through tasks/get and through the REST state.
	got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != task.ID || got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts) != 1 || got.ContextID != task.ContextID {
		t.Errorf("tasks/get: %+v", got)
	}
	zero := 0
	if got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID, HistoryLength: &zero}); err != nil || len(got.History) != 0 {
		t.Errorf("tasks/get historyLength 0: %d messages, %v", len(got.History), err)
	}
	if st := s.state(t, "/v1/workflows/"+string(task.ID)); st["status"] != "completed" {
		t.Errorf("REST state %v", st["status"])
	}
}

func TestA2ASendPlanNonBlockingWithContext(t *testing.T) {
	_, c := startA2A(t)
	ctx := ctxT(t)
	p := nonBlocking(planMessage(plan("A:echo", "B:echo:A", "C:echo:A", "D:echo:B,C")))
	p.Message.ContextID = "conversation-7"
	res, err := c.SendMessage(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.ContextID != "conversation-7" || task.Status.State.Terminal() {
		t.Fatalf("non-blocking send: context %q state %s", task.ContextID, task.Status.State)
	}
	// Resubscribing follows it to the end.
	evs, err := drain(c.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: task.ID}), nil)
	if err != nil {
		t.Fatal(err)
	}
	last, ok := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
	if !ok || !last.Final || last.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("resubscribe ended with %s", describe(evs))
	}
	got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if d := resultData(t, got.Artifacts[0]); d["step_id"] != "D" {
		t.Errorf("result %v, want the sink D's output", d)
	}
}

func TestA2AFailedTask(t *testing.T) {
	_, c := startA2A(t)
	ctx := ctxT(t)
	unserved := map[string]any{"steps": []map[string]any{{"id": "x", "capability": "nobody-serves-this"}}}
	res, err := c.SendMessage(ctx, planMessage(unserved))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateFailed || task.Status.Message == nil || len(task.Artifacts) != 0 {
		t.Fatalf("task %s %+v", task.Status.State, task.Status.Message)
	}
	if text := task.Status.Message.Parts[0].(a2a.TextPart).Text; !strings.Contains(text, "nobody-serves-this") {
		t.Errorf("status message %q does not name the capability", text)
	}
	evs, err := drain(c.SendStreamingMessage(ctx, planMessage(unserved)), nil)
	if err != nil {
		t.Fatal(err)
	}
	last, ok := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
	if !ok || !last.Final || last.Status.State != a2a.TaskStateFailed || last.Metadata["code"] != "unknown_capability" {
		t.Errorf("stream: %s", describe(evs))
	}
}

func TestA2AStream(t *testing.T) {
	_, c := startA2A(t)
	evs, err := drain(c.SendStreamingMessage(ctxT(t), planMessage(plan("A:echo", "B:echo:A", "C:echo:A", "D:echo:B,C"))), nil)
	if err != nil {
		t.Fatalf("%v after %s", err, describe(evs))
	}
	first, ok := evs[0].(*a2a.Task)
	if !ok || first.Status.State != a2a.TaskStateSubmitted {
		t.Fatalf("stream starts with %s, want the submitted task", describe(evs[:1]))
	}
	var prev float64
	var states []a2a.TaskState
	for i, ev := range evs[1:] {
		info := ev.TaskInfo()
		if info.TaskID != first.ID || info.ContextID != first.ContextID {
			t.Fatalf("event %d is for task %s context %s", i, info.TaskID, info.ContextID)
		}
		off, _ := ev.Meta()["offset"].(float64)
		if off < prev || off == 0 {
			t.Fatalf("offsets out of order: %s", describe(evs))
		}
		prev = off
		if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			if su.Final != (i == len(evs)-2) {
				t.Fatalf("final=%t on event %d of %d: %s", su.Final, i+1, len(evs), describe(evs))
			}
			if len(states) == 0 || states[len(states)-1] != su.Status.State {
				states = append(states, su.Status.State)
			}
		}
	}
	if !slices.Equal(states, []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted}) {
		t.Errorf("states %v: %s", states, describe(evs))
	}
	art, ok := evs[len(evs)-2].(*a2a.TaskArtifactUpdateEvent)
	if !ok || !art.LastChunk {
		t.Fatalf("no result artifact before the final event: %s", describe(evs))
	}
	if d := resultData(t, art.Artifact); d["step_id"] != "D" {
		t.Errorf("streamed result %v", d)
	}
	// Each step's output, which comes with its completed status, is an
	// artifact update just before that status update, at its offset.
	outputs := map[string]bool{}
	for i, ev := range evs[:len(evs)-1] {
		a, ok := ev.(*a2a.TaskArtifactUpdateEvent)
		if !ok || a.Metadata["step_id"] == nil {
			continue
		}
		step, _ := a.Metadata["step_id"].(string)
		su, ok := evs[i+1].(*a2a.TaskStatusUpdateEvent)
		if a.Artifact.ID != a2a.ArtifactID(step+".output") || !a.LastChunk || !ok || su.Metadata["step_state"] != "completed" ||
			su.Metadata["step_id"] != step || su.Metadata["offset"] != a.Metadata["offset"] {
			t.Fatalf("step %s's output artifact is not followed by its completed status: %s", step, describe(evs))
		}
		outputs[step] = true
	}
	if len(outputs) != 4 {
		t.Errorf("outputs of steps %v, want A, B, C and D: %s", outputs, describe(evs))
	}
}

func TestA2ACancel(t *testing.T) {
	_, c := startA2A(t)
	ctx := ctxT(t)
	var id a2a.TaskID
	canceled := false
	// Stream a long sleep; once the sleep step runs, cancel it from
	// another call; the stream must end with the canceled state.
	evs, err := drain(c.SendStreamingMessage(ctx, planMessage(sleepPlan(60_000))), func(ev a2a.Event) bool {
		if task, ok := ev.(*a2a.Task); ok {
			id = task.ID
		}
		su, ok := ev.(*a2a.TaskStatusUpdateEvent)
		if ok && !canceled && su.Metadata["step_id"] == "nap" && su.Metadata["step_state"] == "working" {
			canceled = true
			task, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: id})
			if err != nil || task.Status.State != a2a.TaskStateCanceled {
				t.Errorf("cancel: %v, task %+v", err, task)
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("%v after %s", err, describe(evs))
	}
	last, ok := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
	if !canceled || !ok || !last.Final || last.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("stream: %s", describe(evs))
	}
	// Canceling again answers the canceled task; a completed task is not
	// cancelable.
	if task, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: id}); err != nil || task.Status.State != a2a.TaskStateCanceled {
		t.Errorf("second cancel: %v %+v", err, task)
	}
	res, err := c.SendMessage(ctx, textMessage("done soon"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: res.(*a2a.Task).ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("cancel of a completed task: %v, want task not cancelable", err)
	}
}

func TestA2AResubscribe(t *testing.T) {
	_, c := startA2A(t)
	ctx := ctxT(t)
	res, err := c.SendMessage(ctx, nonBlocking(planMessage(sleepPlan(60_000))))
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2a.Task).ID
	evs, err := drain(c.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: id}), func(ev a2a.Event) bool {
		if task, ok := ev.(*a2a.Task); ok {
			if task.ID != id || task.Status.State.Terminal() {
				t.Errorf("resubscribe starts with %+v", task)
			}
			if _, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: id}); err != nil {
				t.Errorf("cancel: %v", err)
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("%v after %s", err, describe(evs))
	}
	if last, ok := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent); !ok || !last.Final || last.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("resubscribe: %s", describe(evs))
	}
	// A finished task: the task and its final status at once.
	evs, err = drain(c.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: id}), nil)
	if err != nil || len(evs) != 2 {
		t.Fatalf("resubscribe to a finished task: %v %s", err, describe(evs))
	}
	if last := evs[1].(*a2a.TaskStatusUpdateEvent); !last.Final || last.Status.State != a2a.TaskStateCanceled {
		t.Errorf("resubscribe to a finished task: %s", describe(evs))
	}
}

func TestA2AApproval(t *testing.T) {
	_, c := startA2A(t)
	ctx := ctxT(t)
	needsApproval := map[string]any{"steps": []map[string]any{
		{"id": "draft", "capability": "echo", "requires_approval": true},
		{"id": "publish", "capability": "echo", "depends_on": []string{"draft"}},
	}}
	for _, tc := range []struct {
		name  string
		reply *a2a.Message
		want  a2a.TaskState
	}{
		{"approve", a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "looks good"}), a2a.TaskStateCompleted},
		{"reject", a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"approve": false, "comment": "no"}}), a2a.TaskStateRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.SendMessage(ctx, planMessage(needsApproval))
			if err != nil {
				t.Fatal(err)
			}
			task := res.(*a2a.Task)
			if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message == nil {
				t.Fatalf("blocking send of a plan that needs approval: %s", task.Status.State)
			}
			tc.reply.TaskID = task.ID
			res, err = c.SendMessage(ctx, &a2a.MessageSendParams{Message: tc.reply})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.(*a2a.Task); got.ID != task.ID || got.Status.State != tc.want {
				t.Errorf("after the reply: task %s %s, want %s", got.ID, got.Status.State, tc.want)
			}
			// A finished task takes no more messages.
			again := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "again"})
			again.TaskID = task.ID
			if _, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: again}); !errors.Is(err, a2a.ErrInvalidParams) {
				t.Errorf("message to a finished task: %v, want invalid params", err)
			}
		})
	}
}

func TestA2AErrorsThroughClient(t *testing.T) {
	s, c := startA2A(t)
	ctx := ctxT(t)
	res, err := c.SendMessage(ctx, textMessage("mine"))
	if err != nil {
		t.Fatal(err)
	}
	mine := res.(*a2a.Task).ID
	other, _ := s.a2aClient(t, "X-Agentbus-Tenant", "acme")
	for _, tc := range []struct {
		name string
		c    *a2aclient.Client
		id   a2a.TaskID
	}{
		{"unknown", c, "no-such-task"},
		{"not a task id", c, "../../etc"},
		{"another tenant's", other, mine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.c.GetTask(ctx, &a2a.TaskQueryParams{ID: tc.id}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("get: %v", err)
			}
			if _, err := tc.c.CancelTask(ctx, &a2a.TaskIDParams{ID: tc.id}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("cancel: %v", err)
			}
			if _, err := drain(tc.c.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: tc.id}), nil); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("resubscribe: %v", err)
			}
			m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "approve"})
			m.TaskID = tc.id
			if _, err := tc.c.SendMessage(ctx, &a2a.MessageSendParams{Message: m}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("follow-up message: %v", err)
			}
		})
	}
	// A file by uri is content agentbus does not fetch (files by bytes are
	// indexed); a push config is not supported.
	file := &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.FilePart{File: a2a.FileURI{URI: "https://example.com/a.pdf"}})}
	if _, err := c.SendMessage(ctx, file); !errors.Is(err, a2a.ErrUnsupportedContentType) {
		t.Errorf("file part: %v", err)
	}
	push := textMessage("x")
	push.Config = &a2a.MessageSendConfig{PushConfig: &a2a.PushConfig{URL: "https://example.com/hook"}}
	if _, err := c.SendMessage(ctx, push); !errors.Is(err, a2a.ErrPushNotificationNotSupported) {
		t.Errorf("push config: %v", err)
	}
}

func TestA2AWithTokens(t *testing.T) {
	const mine, theirs = "a2a-mine-0123456789abcdef", "a2a-theirs-0123456789abcdef"
	s := startStack(t, func(c *gateway.Config) {
		c.Auth.Tokens = []gateway.Token{
			{Token: mine, Tenant: "mine", Role: gateway.RoleClient},
			{Token: theirs, Tenant: "theirs", Role: gateway.RoleClient},
		}
	})
	ctx := ctxT(t)
	c, card := s.a2aClient(t, "Authorization", "Bearer "+mine)
	if len(card.Security) != 1 || card.SecuritySchemes["bearer"] == nil {
		t.Errorf("card security %v schemes %v", card.Security, card.SecuritySchemes)
	}
	res, err := c.SendMessage(ctx, textMessage("tenant mine"))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %s", task.Status.State)
	}
	other, _ := s.a2aClient(t, "Authorization", "Bearer "+theirs)
	if _, err := other.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("another tenant's task: %v", err)
	}
	anonymous, _ := s.a2aClient(t)
	if _, err := anonymous.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without a token: %v, want HTTP 401", err)
	}
}
