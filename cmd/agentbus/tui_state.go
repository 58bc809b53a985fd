package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/events"
	engine "github.com/agentbus/agentbus/workflow"
)

// This file is the live view's state machine: frames (the same typed
// events the plain printer gets) and checkpoint snapshots in, a
// workflowView out. It does no I/O and reads no clock, so that recorded
// event sequences test it without a terminal; tui_render.go draws it and
// tui.go runs it in a bubbletea program.

// stepPhase is what the live view says of one step.
type stepPhase int

const (
	stepQueued   stepPhase = iota // planned, not dispatched yet
	stepRunning                   // dispatched to its capability (a worker runs it or will)
	stepAwaiting                  // done, its result awaits a human decision
	stepCompleted
	stepFailed
	stepSkipped  // never ran: the workflow ended first
	stepCanceled // was running when the workflow was canceled
	stepRejected // its result was rejected
)

func (p stepPhase) String() string {
	return [...]string{"queued", "running", "awaiting approval", "completed", "failed", "skipped", "canceled", "rejected"}[p]
}

// settled reports whether the step will not change any more.
func (p stepPhase) settled() bool { return p >= stepCompleted }

// stepView is one plan step as the live view shows it.
type stepView struct {
	ID         string
	Capability string
	DependsOn  []string
	// Dispatches counts the step's dispatches seen (first run, fallback,
	// a redispatch by the watchdog); Retries is that less the first.
	Dispatches int
	Retries    int
	Phase      stepPhase
	// Worker is the worker that answered, once known ("completed on w").
	Worker string
	// Percent and Note are the step's latest progress from its agent.
	Percent float64
	Note    string
	// Started is the first dispatch's time, Ended the time it settled
	// (both from the frames, the server's clock).
	Started, Ended time.Time
}

// textArtifact is a streamed text result, assembled from its chunks.
type textArtifact struct {
	ID, Name, StepID string
	Text             strings.Builder
	Closed           bool
}

// workflowView is the whole live view's state. Only its methods change it.
type workflowView struct {
	Workflow, Tenant string
	Query            string
	// Status and Message are the workflow's latest state and what it said.
	Status  events.State
	Message string
	// Steps holds every step known, in plan order when the plan is known,
	// else in the order they were first seen.
	Steps  []*stepView
	Stages [][]string
	// PlanKnown says the plan (steps and dependencies) came from a
	// checkpoint; until then only steps seen in frames are listed.
	PlanKnown bool
	// Done/Completed/DonePercent are the orchestrator's progress counts.
	DoneSteps, TotalSteps int
	Artifacts             []*textArtifact
	// Result is the complete event's result; Answer and Citations are
	// read from it when it is a composed answer.
	Result    json.RawMessage
	Answer    string
	Citations []compose.Citation
	// Start is the first frame's time; End the terminal frame's.
	Start, End time.Time
	DurationMS float64
	// Terminal is the terminal frame's type once it came ("complete",
	// "error", "cancelled"); Failure says why the workflow failed.
	Terminal string
	Failure  string
	// Notices are things the user must be told of: a reset (events may be
	// missing), a lost connection.
	Notices    []string
	LastOffset uint64
	Frames     int
}

func newWorkflowView(workflow, tenant string) *workflowView {
	return &workflowView{Workflow: workflow, Tenant: tenant}
}

// step returns the step with id, adding it (unplanned) if it is new.
func (v *workflowView) step(id string) *stepView {
	for _, s := range v.Steps {
		if s.ID == id {
			return s
		}
	}
	s := &stepView{ID: id}
	v.Steps = append(v.Steps, s)
	return s
}

// awaiting reports whether a step awaits a human decision.
func (v *workflowView) awaiting() bool {
	return slices.ContainsFunc(v.Steps, func(s *stepView) bool { return s.Phase == stepAwaiting })
}

// Finished reports whether the terminal frame came.
func (v *workflowView) Finished() bool { return v.Terminal != "" }

// apply folds one frame into the view.
func (v *workflowView) apply(f events.Frame) {
	v.Frames++
	if f.Offset > v.LastOffset {
		v.LastOffset = f.Offset
	}
	if v.Start.IsZero() && !f.Time.IsZero() && f.Type != "connected" && f.Type != "reset" {
		v.Start = f.Time
	}
	switch f.Type {
	case events.TypeStatus.Short():
		var s events.Status
		if json.Unmarshal(f.Data, &s) != nil {
			return
		}
		if s.TotalSteps > 0 { // a finished step's status carries the count
			v.DoneSteps, v.TotalSteps = s.CompletedSteps, s.TotalSteps
		}
		if id := stepOf(f, s.StepID); id != "" {
			if s.Artifact != nil { // a completed step's output
				v.addArtifact(*s.Artifact, id)
			}
			v.stepStatus(v.step(id), s, f.Time)
			return
		}
		v.Status, v.Message = s.State, s.Message
	case events.TypeProgress.Short():
		var p events.Progress
		if json.Unmarshal(f.Data, &p) != nil {
			return
		}
		if p.TotalSteps > 0 { // a count of settled steps (flow control; until November 2026 the orchestrator sent one after each step)
			v.DoneSteps, v.TotalSteps = p.CompletedSteps, p.TotalSteps
			return
		}
		if id := stepOf(f, p.StepID); id != "" {
			s := v.step(id)
			s.Percent, s.Note = p.Percent, p.Message
			if s.Phase == stepQueued {
				s.Phase = stepRunning
			}
		}
	case events.TypeArtifact.Short():
		v.artifact(f)
	case events.TypeComplete.Short():
		var c events.Complete
		_ = json.Unmarshal(f.Data, &c)
		v.Result, v.DurationMS = c.Result, c.DurationMS
		var out compose.Output
		if json.Unmarshal(c.Result, &out) == nil && out.Answer != "" {
			v.Answer, v.Citations = out.Answer, out.Citations
		}
		v.finish(f, events.StateCompleted)
	case events.TypeError.Short():
		var e events.Error
		_ = json.Unmarshal(f.Data, &e)
		v.Failure = e.Message
		if e.Code != "" {
			v.Failure = e.Code + ": " + e.Message
		}
		v.finish(f, events.StateFailed)
	case events.TypeCancelled.Short():
		var c events.Cancelled
		_ = json.Unmarshal(f.Data, &c)
		v.Failure = c.Reason
		v.finish(f, events.StateCanceled)
	case "reset":
		v.reset(f)
	}
}

// stepOf is a frame's step: its own, or its data's.
func stepOf(f events.Frame, data string) string {
	if f.StepID != "" {
		return f.StepID
	}
	return data
}

// stepStatus applies a step's status event, as the orchestrator words them
// (orchestrator/dispatch.go, reply.go, control.go, lease.go).
func (v *workflowView) stepStatus(s *stepView, st events.Status, at time.Time) {
	switch st.State {
	case events.StateWorking:
		note := st.Message
		if c, ok := strings.CutPrefix(st.Message, "dispatched to "); ok {
			// A first dispatch needs no note; a later one keeps the
			// reason for it (a fallback) if one came before.
			s.Dispatches++
			s.Capability = cmp.Or(c, s.Capability)
			s.Percent, s.Worker, s.Started, s.Ended = 0, "", at, time.Time{}
			note = ""
			if s.Dispatches > 1 && s.Phase == stepRunning {
				note = s.Note
			}
		} else if strings.Contains(st.Message, "dispatched again as attempt") {
			s.Dispatches++
		}
		s.Retries = max(s.Dispatches-1, 0)
		if s.Started.IsZero() {
			s.Started = at
		}
		s.Phase, s.Note = stepRunning, note
	case events.StateInputRequired:
		s.Phase, s.Note = stepAwaiting, st.Message
	case events.StateCompleted:
		s.Phase, s.Note, s.Percent = stepCompleted, st.Message, 100
		if w, ok := strings.CutPrefix(st.Message, "completed on "); ok {
			s.Worker, s.Note = w, ""
		} else {
			s.Note = strings.TrimSuffix(strings.TrimSpace(st.Message), ":") // "approved: " and no comment
		}
		if s.Ended.IsZero() {
			s.Ended = at
		}
	case events.StateFailed:
		s.Phase, s.Note, s.Ended = stepFailed, st.Message, at
	case events.StateRejected:
		s.Phase, s.Note, s.Ended = stepRejected, st.Message, at
	case events.StateCanceled:
		s.Phase, s.Note, s.Ended = stepCanceled, st.Message, at
	}
}

// artifact appends a text chunk to its artifact; other data is left to the
// complete event's result.
func (v *workflowView) artifact(f events.Frame) {
	var a events.Artifact
	if json.Unmarshal(f.Data, &a) != nil {
		return
	}
	v.addArtifact(a, stepOf(f, a.StepID))
}

// addArtifact appends a text chunk to its artifact, of step.
func (v *workflowView) addArtifact(a events.Artifact, step string) {
	var text string
	if json.Unmarshal(a.Data, &text) != nil {
		return
	}
	var t *textArtifact
	for _, x := range v.Artifacts {
		if x.ID == a.ArtifactID {
			t = x
		}
	}
	if t == nil {
		t = &textArtifact{ID: a.ArtifactID, Name: a.Name, StepID: step}
		v.Artifacts = append(v.Artifacts, t)
	}
	if !a.Append || t.Closed {
		t.Text.Reset()
	}
	t.Text.WriteString(text)
	t.Closed = a.LastChunk
}

// finish records the terminal frame: what never ran is skipped, and what
// ran when the workflow was canceled is canceled.
func (v *workflowView) finish(f events.Frame, st events.State) {
	v.Terminal, v.Status, v.End = f.Type, st, f.Time
	for _, s := range v.Steps {
		switch {
		case s.Phase == stepQueued:
			s.Phase = stepSkipped
		case s.Phase == stepRunning && st != events.StateCompleted:
			s.Phase, s.Ended = stepCanceled, f.Time
		case s.Phase == stepAwaiting && st == events.StateFailed:
			s.Phase, s.Ended = stepRejected, f.Time
		}
	}
}

// resetFrame is a reset frame's data: the checkpoint now, and why.
type resetFrame struct {
	engine.Checkpoint
	Reason     string `json:"reason"`
	ResumeFrom uint64 `json:"resume_from"`
}

// reset takes the checkpoint a reset frame carries as the truth, since
// the events before its resume point are gone, and says so.
func (v *workflowView) reset(f events.Frame) {
	var r resetFrame
	if json.Unmarshal(f.Data, &r) != nil {
		v.Notices = append(v.Notices, "reset: the gateway sent an unreadable snapshot")
		return
	}
	why := "events after your offset may have expired"
	if r.Reason == "epoch" {
		why = "the event stream was recreated"
	}
	v.Notices = append(v.Notices, fmt.Sprintf("reset: %s; state taken from the checkpoint, continuing after offset %d", why, r.ResumeFrom))
	v.LastOffset = max(v.LastOffset, r.ResumeFrom)
	v.applySnapshot(r.Checkpoint, true)
}

// applySnapshot takes the plan from a checkpoint (GET /v1/workflows/{id}
// or a reset frame). withStates also takes each step's and the
// workflow's state: right when the events before it were not seen (a
// reset, or watch from an offset), wrong when they were, since the
// snapshot may be ahead of the frames applied so far.
func (v *workflowView) applySnapshot(cp engine.Checkpoint, withStates bool) {
	if v.Query == "" {
		v.Query = cp.Query
	}
	if len(cp.Plan.Steps) > 0 {
		v.plan(cp.Plan, cp.Stages)
	}
	if !withStates {
		return
	}
	if cp.Status != "" && !v.Finished() {
		v.Status = cp.Status
	}
	if v.Start.IsZero() {
		v.Start = cp.CreatedAt
	}
	for id, t := range cp.Tasks {
		if t == nil {
			continue
		}
		s := v.step(id)
		s.Capability = t.Capability
		s.Dispatches = t.Attempt
		s.Retries = max(t.Attempt-1, 0)
		s.Worker = t.Worker
		if t.DispatchedAt != nil && s.Started.IsZero() {
			s.Started = *t.DispatchedAt
		}
		if t.CompletedAt != nil {
			s.Ended = *t.CompletedAt
		}
		switch t.Status {
		case events.StateWorking:
			s.Phase = stepRunning
		case events.StateInputRequired:
			s.Phase = stepAwaiting
		case events.StateCompleted:
			s.Phase, s.Percent = stepCompleted, 100
		case events.StateFailed:
			s.Phase, s.Note = stepFailed, t.Error
		case events.StateRejected:
			s.Phase = stepRejected
		case events.StateCanceled:
			s.Phase = stepSkipped
			if t.DispatchedAt != nil {
				s.Phase = stepCanceled
			}
		default:
			s.Phase = stepQueued
		}
	}
}

// plan lays the steps out in plan order with their dependencies and
// stages, keeping what frames already said of each.
func (v *workflowView) plan(p events.Plan, stages [][]string) {
	seen := v.Steps
	v.Steps = nil
	for _, ps := range p.Steps {
		var s *stepView
		for _, x := range seen {
			if x.ID == ps.ID {
				s = x
			}
		}
		if s == nil {
			s = &stepView{ID: ps.ID}
		}
		if s.Capability == "" {
			s.Capability = ps.Capability
		}
		s.DependsOn = slices.Clone(ps.DependsOn)
		v.Steps = append(v.Steps, s)
	}
	for _, x := range seen { // a step a frame named that the plan lacks
		if !slices.ContainsFunc(v.Steps, func(s *stepView) bool { return s.ID == x.ID }) {
			v.Steps = append(v.Steps, x)
		}
	}
	if len(stages) == 0 {
		stages, _ = engine.Stages(p)
	}
	v.Stages, v.PlanKnown = stages, true
}

// AnswerText is the answer to show: the composed answer once complete,
// else the text streamed so far.
func (v *workflowView) AnswerText() string {
	if v.Answer != "" {
		return v.Answer
	}
	var parts []string
	for _, a := range v.Artifacts {
		if t := strings.TrimSpace(a.Text.String()); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// ResultJSON is the result indented for display when it is not a
// composed answer (e.g. an echo plan's output), or "".
func (v *workflowView) ResultJSON() string {
	if v.Answer != "" || len(v.Result) == 0 || string(v.Result) == "null" {
		return ""
	}
	var x any
	if json.Unmarshal(v.Result, &x) != nil {
		return string(v.Result)
	}
	b, _ := json.MarshalIndent(x, "", "  ")
	return string(b)
}

// Elapsed is the workflow's run time: to its end, or to now.
func (v *workflowView) Elapsed(now time.Time) time.Duration { return span(v.Start, v.End, now) }

// elapsed is how long a step has run (or ran).
func (s *stepView) elapsed(now time.Time) time.Duration { return span(s.Started, s.Ended, now) }

// span is start to end, or to now while there is no end; 0 before start.
func span(start, end, now time.Time) time.Duration {
	if start.IsZero() {
		return 0
	}
	if end.IsZero() {
		end = now
	}
	return max(end.Sub(start), 0)
}
