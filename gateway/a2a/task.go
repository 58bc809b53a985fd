package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// resultArtifactID names the artifact that carries a completed workflow's
// result, in tasks/get and in the artifact-update a stream ends with.
const resultArtifactID a2a.ArtifactID = "result"

// taskCheckpoint is the part of an orchestrator checkpoint an A2A Task is
// built from (the gateway reads checkpoints, it never imports the
// orchestrator).
type taskCheckpoint struct {
	WorkflowID string       `json:"workflow_id"`
	Query      string       `json:"query"`
	Status     events.State `json:"status"`
	Phase      string       `json:"phase"`
	Plan       events.Plan  `json:"plan"`
	Tasks      map[string]struct {
		Capability string       `json:"capability"`
		Status     events.State `json:"status"`
	} `json:"tasks"`
	Result    json.RawMessage `json:"result"`
	Error     *events.Error   `json:"error"`
	Canceled  string          `json:"canceled"`
	UpdatedAt time.Time       `json:"updated_at"`
	// Metadata is the submission's metadata, if the orchestrator keeps it.
	Metadata map[string]string `json:"metadata"`
}

// loadTask reads a workflow's checkpoint; another tenant's workflow,
// one the request does not see (another user's: gateway/auth_scope.go),
// or an id that cannot name one, is not found.
func (g *Server) loadTask(ctx context.Context, tenant, id string) (taskCheckpoint, *rpcError) {
	var cp taskCheckpoint
	key, err := subjects.CheckpointKey(tenant, id)
	if err != nil {
		return cp, errTaskNotFound(id)
	}
	e, err := g.checkpoints.GetFresh(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		return cp, errTaskNotFound(id)
	}
	if err != nil {
		return cp, rpcErr(rpcInternalError, "", "reading the task: %v", err)
	}
	var raw map[string]json.RawMessage
	js, err := workflow.CheckpointJSON(e.Value)
	if err != nil || json.Unmarshal(js, &raw) != nil || json.Unmarshal(js, &cp) != nil {
		if !g.gw.SeesAll(ctx) {
			return cp, errTaskNotFound(id) // whose it is cannot be told
		}
		return cp, rpcErr(rpcInternalError, "", "corrupt checkpoint of task %q", id)
	}
	if !g.gw.Sees(ctx, raw) {
		return taskCheckpoint{}, errTaskNotFound(id)
	}
	return cp, nil
}

// taskExists reports whether the tenant has a workflow of that id, seen
// by the request or not: ids are one namespace per tenant, so a new task
// may not take another user's.
func (g *Server) taskExists(ctx context.Context, tenant, id string) bool {
	key, err := subjects.CheckpointKey(tenant, id)
	if err != nil {
		return false
	}
	_, err = g.checkpoints.Get(ctx, key)
	return err == nil
}

// contextID is the task's A2A context: the one the client's first message
// named, if the checkpoint kept it, else the task's own id (a context of
// one task, stable across reads).
func (cp taskCheckpoint) contextID() string {
	if c := cp.Metadata[metaContextID]; c != "" {
		return c
	}
	return cp.WorkflowID
}

// task renders the checkpoint as an A2A Task. historyLength, if set,
// keeps only that many of the most recent messages.
func (cp taskCheckpoint) task(historyLength *int) *a2a.Task {
	id, ctxID := a2a.TaskID(cp.WorkflowID), cp.contextID()
	ts := cp.UpdatedAt
	t := &a2a.Task{
		ID: id, ContextID: ctxID,
		Status: a2a.TaskStatus{State: a2a.TaskState(cp.Status), Timestamp: &ts},
		Metadata: map[string]any{
			"workflow_id": cp.WorkflowID,
			"phase":       cp.Phase,
			"events_url":  "/v1/workflows/" + url.PathEscape(cp.WorkflowID) + "/events",
		},
	}
	if cp.Status == "" {
		t.Status.State = a2a.TaskStateSubmitted
	}
	if len(cp.Tasks) > 0 {
		steps := map[string]any{}
		for id, s := range cp.Tasks {
			steps[id] = map[string]any{"capability": s.Capability, "state": string(s.Status)}
		}
		t.Metadata["steps"] = steps
	}
	user := &a2a.Message{ID: cp.WorkflowID + "-request", Role: a2a.MessageRoleUser, TaskID: id, ContextID: ctxID}
	switch {
	case cp.Query != "":
		user.Parts = a2a.ContentParts{a2a.TextPart{Text: cp.Query}}
	case len(cp.Plan.Steps) > 0:
		var plan map[string]any
		b, _ := json.Marshal(cp.Plan)
		_ = json.Unmarshal(b, &plan)
		user.Parts = a2a.ContentParts{a2a.DataPart{Data: map[string]any{"plan": plan}}}
	}
	if len(user.Parts) > 0 {
		t.History = append(t.History, user)
	}
	if text := cp.statusText(); text != "" {
		t.Status.Message = agentMessage(t, cp.WorkflowID+"-status", text, nil)
		if cp.Status.Terminal() {
			t.History = append(t.History, t.Status.Message)
		}
	}
	if cp.Status == events.StateCompleted && cp.Result != nil {
		t.Artifacts = []*a2a.Artifact{resultArtifact(cp.Result)}
	}
	if historyLength != nil && *historyLength < len(t.History) {
		t.History = t.History[len(t.History)-*historyLength:]
	}
	return t
}

// statusText says in words why the workflow is where it is.
func (cp taskCheckpoint) statusText() string {
	switch cp.Status {
	case events.StateCompleted:
		return fmt.Sprintf("workflow completed: %d steps", len(cp.Tasks))
	case events.StateFailed, events.StateRejected:
		if cp.Error != nil {
			return cp.Error.Message
		}
		return "workflow " + string(cp.Status)
	case events.StateCanceled:
		if cp.Canceled != "" {
			return "canceled: " + cp.Canceled
		}
		return "canceled"
	case events.StateInputRequired, events.StateWorking:
		var waiting, running []string
		for id, s := range cp.Tasks {
			switch s.Status {
			case events.StateInputRequired:
				waiting = append(waiting, id)
			case events.StateWorking:
				running = append(running, id)
			}
		}
		slices.Sort(waiting)
		slices.Sort(running)
		if len(waiting) > 0 {
			return "awaiting approval of step " + strings.Join(waiting, ", ") +
				": reply to this task (a data part {\"approve\": false} rejects) or POST /v1/workflows/" + cp.WorkflowID + "/approve"
		}
		if len(running) > 0 {
			return "running step " + strings.Join(running, ", ")
		}
	}
	return ""
}

// agentMessage is a message from agentbus about task t.
func agentMessage(t a2a.TaskInfoProvider, id, text string, meta map[string]any) *a2a.Message {
	info := t.TaskInfo()
	return &a2a.Message{ID: id, Role: a2a.MessageRoleAgent, TaskID: info.TaskID, ContextID: info.ContextID,
		Parts: a2a.ContentParts{a2a.TextPart{Text: text}}, Metadata: meta}
}

// resultArtifact carries a workflow's result.
func resultArtifact(result json.RawMessage) *a2a.Artifact {
	return &a2a.Artifact{ID: resultArtifactID, Name: "result",
		Description: "the workflow's result: the output of its final step(s)", Parts: jsonParts(result)}
}

// jsonParts renders a JSON value as parts: a string as text, an object as
// data, anything else as data {"value": …}.
func jsonParts(raw json.RawMessage) a2a.ContentParts {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return a2a.ContentParts{a2a.TextPart{Text: string(raw)}}
	}
	switch x := v.(type) {
	case string:
		return a2a.ContentParts{a2a.TextPart{Text: x}}
	case map[string]any:
		return a2a.ContentParts{a2a.DataPart{Data: x}}
	}
	return a2a.ContentParts{a2a.DataPart{Data: map[string]any{"value": v}}}
}

// taskEvents turns a workflow's client events, in order, into A2A stream
// events. The workflow's terminal status is held back until its terminal
// event, which becomes the one status-update with final=true (after the
// result's artifact-update on completion). It is not safe for concurrent
// use.
type taskEvents struct {
	info     a2a.TaskInfo
	terminal events.State
	// awaiting holds the steps that await a decision: while any does, the
	// task is input-required (as the orchestrator's checkpoint says).
	awaiting map[string]bool
	state    a2a.TaskState
}

func newTaskEvents(id, contextID string, state a2a.TaskState) *taskEvents {
	return &taskEvents{info: a2a.TaskInfo{TaskID: a2a.TaskID(id), ContextID: contextID}, awaiting: map[string]bool{}, state: state}
}

func (m *taskEvents) TaskInfo() a2a.TaskInfo { return m.info }

// artifact is an artifact as an A2A artifact update.
func (m *taskEvents) artifact(meta map[string]any, a events.Artifact) *a2a.TaskArtifactUpdateEvent {
	return &a2a.TaskArtifactUpdateEvent{TaskID: m.info.TaskID, ContextID: m.info.ContextID, Metadata: meta,
		Append: a.Append, LastChunk: a.LastChunk,
		Artifact: &a2a.Artifact{ID: a2a.ArtifactID(a.ArtifactID), Name: a.Name, Parts: jsonParts(a.Data)}}
}

// next maps one stored event; final reports the end of the task's stream.
func (m *taskEvents) next(offset uint64, env events.Envelope) (out []a2a.Event, final bool) {
	meta := map[string]any{"offset": offset, "event": env.Type.Short()}
	if env.StepID != "" {
		meta["step_id"] = env.StepID
	}
	msgID := fmt.Sprintf("%s-%d", m.info.TaskID, offset)
	update := func(state a2a.TaskState, text string, final bool) *a2a.TaskStatusUpdateEvent {
		ts := env.Time
		ev := &a2a.TaskStatusUpdateEvent{TaskID: m.info.TaskID, ContextID: m.info.ContextID, Final: final, Metadata: meta,
			Status: a2a.TaskStatus{State: state, Timestamp: &ts}}
		if text != "" {
			ev.Status.Message = agentMessage(m, msgID, text, nil)
		}
		m.state = state
		return ev
	}
	switch env.Type {
	case events.TypeStatus:
		var s events.Status
		if env.Unmarshal(&s) != nil {
			return nil, false
		}
		if s.StepID == "" {
			if s.State.Terminal() {
				m.terminal = s.State
				return nil, false
			}
			return []a2a.Event{update(a2a.TaskState(s.State), s.Message, false)}, false
		}
		var art *a2a.TaskArtifactUpdateEvent
		if s.Artifact != nil {
			// A completed step's output comes with its status: A2A has it
			// as an artifact update before the status update, as when it
			// was an event of its own.
			a := *s.Artifact
			a.StepID = s.StepID
			art = m.artifact(maps.Clone(meta), a)
		}
		meta["step_state"] = string(s.State)
		if s.TotalSteps > 0 {
			meta["completed_steps"], meta["total_steps"] = s.CompletedSteps, s.TotalSteps
			meta["percent"] = 100 * float64(s.CompletedSteps) / float64(s.TotalSteps)
		}
		if s.State == events.StateInputRequired {
			m.awaiting[s.StepID] = true
		} else {
			delete(m.awaiting, s.StepID)
		}
		state := a2a.TaskStateWorking
		if len(m.awaiting) > 0 {
			state = a2a.TaskStateInputRequired
		}
		up := update(state, fmt.Sprintf("step %s %s: %s", s.StepID, s.State, s.Message), false)
		if art == nil {
			return []a2a.Event{up}, false
		}
		return []a2a.Event{art, up}, false
	case events.TypeProgress:
		var p events.Progress
		if env.Unmarshal(&p) != nil {
			return nil, false
		}
		meta["completed_steps"], meta["total_steps"], meta["percent"] = p.CompletedSteps, p.TotalSteps, p.Percent
		return []a2a.Event{update(m.state, fmt.Sprintf("%d/%d steps done (%.0f%%): %s", p.CompletedSteps, p.TotalSteps, p.Percent, p.Message), false)}, false
	case events.TypeArtifact:
		var a events.Artifact
		if env.Unmarshal(&a) != nil {
			return nil, false
		}
		return []a2a.Event{m.artifact(meta, a)}, false
	case events.TypeComplete:
		var c events.Complete
		if env.Unmarshal(&c) != nil {
			return nil, false
		}
		art := &a2a.TaskArtifactUpdateEvent{TaskID: m.info.TaskID, ContextID: m.info.ContextID, Metadata: meta,
			LastChunk: true, Artifact: resultArtifact(c.Result)}
		return []a2a.Event{art, update(a2a.TaskStateCompleted, "workflow completed", true)}, true
	case events.TypeError:
		var e events.Error
		_ = env.Unmarshal(&e)
		state := a2a.TaskStateFailed
		if m.terminal == events.StateRejected || e.Code == events.CodeRejected {
			state = a2a.TaskStateRejected
		}
		meta["code"] = e.Code
		return []a2a.Event{update(state, e.Message, true)}, true
	case events.TypeCancelled:
		var c events.Cancelled
		_ = env.Unmarshal(&c)
		text := "canceled"
		if c.Reason != "" {
			text += ": " + c.Reason
		}
		return []a2a.Event{update(a2a.TaskStateCanceled, text, true)}, true
	}
	return nil, false
}
