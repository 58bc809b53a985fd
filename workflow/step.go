package workflow

import (
	"encoding/json"
	"fmt"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// stepArtifact is a completed step's output as an artifact, carried by
// the step's completed (or input-required) status, so that a client
// following the workflow has every step's result as it comes, not only
// all of them in the final complete event. The status names the step.
func stepArtifact(r events.StepCompleted) *events.Artifact {
	out := r.Output
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return &events.Artifact{ArtifactID: StepArtifactID(r.StepID), Name: r.Capability + " output", Data: out, LastChunk: true}
}

// completed records a step's output, holds it for approval if its plan
// step requires one, and moves the workflow on.
func (x *tx) completed(r events.StepCompleted) error {
	cp := x.cp
	t := cp.Tasks[r.StepID]
	now := x.now
	t.Output, t.Worker, t.CompletedAt = r.Output, r.Worker, &now
	t.QueuedMS, t.RunMS = r.QueuedMS, r.DurationMS
	x.spend(r.Usage)
	s, _ := cp.PlanStep(r.StepID)
	to, status := events.StateCompleted, events.Status{State: events.StateCompleted, StepID: r.StepID, Message: "completed on " + r.Worker}
	if s.RequiresApproval {
		to, status = x.review(r.StepID, t)
	}
	x.setTask(r.StepID, t, to, CauseReply)
	cp.measure(now, false)
	cp.ExecutionOrder = append(cp.ExecutionOrder, r.StepID)
	status.Artifact = stepArtifact(r)
	if err := x.emit(events.TypeStatus, r.StepID, x.counted(status)); err != nil {
		return err
	}
	return x.advance(CauseAdvance)
}

// review decides on a completed step that requires approval: approved
// without a human if its output's confidence clears the threshold, else
// held, input-required.
func (x *tx) review(step string, t *Task) (events.State, events.Status) {
	var out struct {
		Confidence *float64 `json:"confidence"`
	}
	_ = json.Unmarshal(t.Output, &out)
	threshold := x.p.ApprovalThreshold
	if out.Confidence != nil && *out.Confidence >= threshold {
		t.Approval = &Approval{State: ApprovalAuto, Confidence: out.Confidence}
		return events.StateCompleted, events.Status{State: events.StateCompleted, StepID: step,
			Message: fmt.Sprintf("auto-approved: confidence %.2f >= %.2f", *out.Confidence, threshold)}
	}
	t.Approval = &Approval{State: ApprovalPending, Confidence: out.Confidence}
	why := "no confidence reported"
	if out.Confidence != nil {
		why = fmt.Sprintf("confidence %.2f < %.2f", *out.Confidence, threshold)
	}
	return events.StateInputRequired, events.Status{State: events.StateInputRequired, StepID: step,
		Message: fmt.Sprintf("step %s awaits approval (%s): approve or reject it with POST /v1/workflows/%s/approve", step, why, x.cp.WorkflowID)}
}

// counted adds to a finished step's status how many of the workflow's
// steps have settled: its progress, which needs no event of its own.
func (x *tx) counted(s events.Status) events.Status {
	for id := range x.cp.Tasks {
		if x.cp.Settled(id) {
			s.CompletedSteps++
		}
	}
	s.TotalSteps = len(x.cp.Tasks)
	return s
}

// failed records a step's failure: its fallback takes over if it has one
// not yet used; an optional step fails alone; any other fails the
// workflow.
func (x *tx) failed(r events.StepFailed) error {
	cp := x.cp
	t := cp.Tasks[r.StepID]
	s, _ := cp.PlanStep(r.StepID)
	now := x.now
	if s.Fallback != "" && t.FellBack == "" {
		if err := x.emit(events.TypeStatus, r.StepID, events.Status{State: events.StateWorking, StepID: r.StepID,
			Message: fmt.Sprintf("%s failed (%s); falling back to %s", t.Capability, r.Error, s.Fallback)}); err != nil {
			return err
		}
		x.setTask(r.StepID, t, events.StateSubmitted, CauseFallback)
		t.FellBack, t.Capability, t.Error = s.Fallback, s.Fallback, r.Error
		return x.advance(CauseAdvance)
	}
	x.spend(r.Usage)
	x.setTask(r.StepID, t, events.StateFailed, CauseReply)
	t.Error, t.Worker, t.CompletedAt = r.Error, r.Worker, &now
	t.QueuedMS, t.RunMS = r.QueuedMS, r.DurationMS
	cp.measure(now, false)
	cp.ExecutionOrder = append(cp.ExecutionOrder, r.StepID)
	if s.Optional {
		if err := x.emit(events.TypeStatus, r.StepID, x.counted(events.Status{State: events.StateFailed, StepID: r.StepID,
			Message: "optional step failed, continuing without it: " + r.Error})); err != nil {
			return err
		}
		return x.advance(CauseAdvance)
	}
	if err := x.emit(events.TypeStatus, r.StepID, events.Status{State: events.StateFailed, StepID: r.StepID, Message: r.Error}); err != nil {
		return err
	}
	x.stopOthers(fmt.Sprintf("workflow failed: step %s failed", r.StepID))
	return x.fail(events.Error{Code: events.CodeStepFailed, StepID: r.StepID,
		Message: fmt.Sprintf("step %q (%s) failed: %s", r.StepID, r.Capability, r.Error)}, CauseReply)
}

// dispatchReady dispatches every task that has not been dispatched and
// whose dependencies have all settled, with their outputs (null for an
// optional step that failed). Steps are taken in stage order, so the
// dispatch order is Kahn's.
//
// A paused workflow dispatches nothing. A wait step is started, not
// dispatched; one that completes at once (a signal kept for it) may make
// others ready, so the stages are gone through again until nothing more
// starts.
func (x *tx) dispatchReady() error {
	if x.cp.OverBudget() || x.cp.Paused {
		return nil // the steps not yet run wait for the budget's decision (advance), or for the unpause
	}
	for {
		again, err := x.dispatchStages()
		if err != nil || !again {
			return err
		}
	}
}

// dispatchStages is one pass of dispatchReady; it reports whether a wait
// step completed as it started.
func (x *tx) dispatchStages() (bool, error) {
	again := false
	for _, stage := range x.cp.Stages {
		for _, id := range stage {
			t := x.cp.Tasks[id]
			if t.Status != events.StateSubmitted {
				continue
			}
			s, _ := x.cp.PlanStep(id)
			deps, ready := x.cp.Inputs(s)
			if !ready {
				continue
			}
			if t.Confirm != "" && (t.Approval == nil || t.Approval.State != ApprovalApproved) {
				if err := x.hold(s, t); err != nil {
					return false, err
				}
				continue
			}
			if t.Capability == CapabilityWait {
				done, err := x.startWait(s, t, CauseDispatch)
				if err != nil {
					return false, err
				}
				again = again || done
				continue
			}
			if err := x.request(s, t, deps, CauseDispatch); err != nil {
				return false, err
			}
			t.Since = t.Attempt
			msg := "dispatched to " + t.Capability
			if x.p.Park[t.Capability] {
				msg = "dispatched to " + t.Capability + " (busy: queued)"
				if p := x.cp.EffectivePriority(); p != 0 {
					msg = fmt.Sprintf("dispatched to %s (busy: queued, priority %d)", t.Capability, p)
				}
			}
			if err := x.emit(events.TypeStatus, s.ID, events.Status{State: events.StateWorking, StepID: s.ID, Message: msg}); err != nil {
				return false, err
			}
		}
	}
	return again, nil
}

// hold asks for a confirmation before a ready step runs (Task.Confirm):
// the step is input-required, its status event shows the rule and the
// input it would run with, and Approve dispatches it.
func (x *tx) hold(s events.PlanStep, t *Task) error {
	t.Approval = &Approval{State: ApprovalPending, BeforeDispatch: true}
	x.setTask(s.ID, t, events.StateInputRequired, CauseConfirm)
	shown := "no input"
	if len(s.Input) > 0 {
		shown = "input " + clip(string(s.Input), confirmShown)
	}
	return x.emit(events.TypeStatus, s.ID, events.Status{State: events.StateInputRequired, StepID: s.ID,
		Confirm: &events.Confirmation{Capability: t.Capability, Rule: t.Confirm, Input: s.Input},
		Message: fmt.Sprintf("step %s (%s) waits for a confirmation before it runs (tool permission %s), with %s: approve or reject it with POST /v1/workflows/%s/approve",
			s.ID, t.Capability, t.Confirm, shown, x.cp.WorkflowID)})
}

// confirmShown is how much of a held step's input its status message
// shows; the event's confirm field has all of it.
const confirmShown = 500

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// request queues the task's next attempt: its step request and, at the
// workflow's first, the watchdog's timer.
func (x *tx) request(s events.PlanStep, t *Task, deps map[string]json.RawMessage, cause Cause) error {
	cp := x.cp
	parked := x.p.Park[t.Capability]
	subj, err := subjects.Step(cp.TenantID, t.Capability)
	if parked {
		subj, err = subjects.Queue(cp.TenantID, t.Capability, cp.EffectivePriority())
	}
	if err != nil {
		return err
	}
	t.Attempt++
	x.setTask(s.ID, t, events.StateWorking, cause)
	t.StepSeq = 0
	t.HeldSince, t.SteppedDownAt, t.RenewedAt, t.HandedWith, t.HandedLeaseMS = nil, nil, nil, "", 0
	now := x.now
	t.DispatchedAt = &now
	req := events.StepRequested{StepID: s.ID, Capability: t.Capability, Attempt: t.Attempt, Query: cp.Query, Input: s.Input, TimeoutMS: s.TimeoutMS,
		Problems: cp.Problems(), Conversation: cp.Conversation(), User: cp.User, Role: cp.Role}
	if len(deps) > 0 {
		req.DependencyOutputs = deps
	}
	data, err := events.MarshalChecked(req)
	if err != nil {
		return err
	}
	x.setStatus(cp.Status, PhaseExecuting, cause)
	if cp.Watch == 0 {
		if err := x.armWatch(); err != nil {
			return err
		}
	}
	x.eff.Dispatches = append(x.eff.Dispatches, Dispatch{StepID: s.ID, Capability: t.Capability, Attempt: t.Attempt, Parked: parked, Index: len(x.eff.Outbox)})
	x.eff.Outbox = append(x.eff.Outbox, Outgoing{
		Subject: subj, MsgID: events.StepKey(cp.TenantID, cp.WorkflowID, s.ID, t.Attempt),
		Type: events.TypeStepRequested, StepID: s.ID, Time: now, Data: data,
	})
	return nil
}

// armWatch queues a new watchdog timer for the workflow, due a third of
// a lease from now (FirstLook), unless the watchdog is off.
func (x *tx) armWatch() error {
	if x.p.StepLease <= 0 {
		return nil
	}
	x.cp.Watch++
	m, err := WatchTimer(x.cp, x.cp.Watch, x.now.Add(FirstLook(x.p.StepLease)), x.now)
	if err != nil {
		return err
	}
	x.eff.Outbox = append(x.eff.Outbox, m)
	return nil
}

// advance moves the workflow on after a task settled: dispatch what is
// ready, wait for approvals, or complete.
func (x *tx) advance(cause Cause) error {
	if err := x.dispatchReady(); err != nil {
		return err
	}
	pending, open, waiting := 0, 0, 0
	for id, t := range x.cp.Tasks {
		switch {
		case t.Approval != nil && t.Approval.State == ApprovalPending:
			pending++
		case !x.cp.Settled(id):
			open++
			if t.Status == events.StateSubmitted {
				waiting++
			}
		}
	}
	if waiting > 0 && x.cp.OverBudget() {
		held, err := x.overBudget(waiting)
		if err != nil || x.cp.Status.Terminal() {
			return err
		}
		if held {
			pending++
		}
	}
	switch {
	case pending == 0 && open == 0:
		return x.complete()
	case pending > 0:
		x.setStatus(events.StateInputRequired, PhaseAwaiting, cause)
	default:
		x.setStatus(events.StateWorking, PhaseExecuting, cause)
	}
	return nil
}

// complete ends the workflow with its result: the sink step's output, or
// the sinks' outputs by id.
func (x *tx) complete() error {
	cp := x.cp
	outputs := make(map[string]json.RawMessage, len(cp.Tasks))
	partial := false
	for _, s := range cp.Plan.Steps {
		out := cp.Tasks[s.ID].Output
		if cp.Tasks[s.ID].Status != events.StateCompleted {
			partial, out = true, json.RawMessage("null")
		}
		outputs[s.ID] = out
	}
	sinks := SinkSteps(cp.Plan)
	result := outputs[sinks[0]]
	if len(sinks) > 1 {
		m := make(map[string]json.RawMessage, len(sinks))
		for _, id := range sinks {
			m[id] = outputs[id]
		}
		result, _ = json.Marshal(m)
	}
	var usage *events.Usage
	if cp.Usage.Calls > 0 || cp.Usage.Tokens() > 0 {
		u := cp.Usage
		usage = &u
	}
	x.setStatus(events.StateCompleted, PhaseDone, CauseAdvance)
	cp.Result = result
	cp.measure(x.now, true)
	// The complete event alone says the workflow completed: until
	// November 2026 a status event (completed, no step) said it first,
	// which doubled the end of every log (about 560 stored bytes).
	return x.emit(events.TypeComplete, "", events.Complete{
		Result: result, Outputs: outputs, Partial: partial, DurationMS: cp.EndToEndMS, PhaseLatency: cp.latency(), Usage: usage,
	})
}

// spend adds a reply's model spending to the workflow's.
func (x *tx) spend(u *events.Usage) {
	if u == nil {
		return
	}
	x.cp.Usage = x.cp.Usage.Add(*u)
	x.eff.Usage = x.eff.Usage.Add(*u)
}

// overBudget decides for the steps not yet run of a workflow that spent
// its budget: the workflow fails (on_exceed fail), or they wait for a
// decision, said once (pause, the default). It reports whether they wait.
func (x *tx) overBudget(waiting int) (bool, error) {
	cp := x.cp
	b := cp.Budget
	spent := fmt.Sprintf("the workflow spent %d tokens on models, its budget is %d", cp.Usage.Tokens(), b.Tokens)
	if b.OnExceed == events.BudgetFail {
		return false, x.fail(events.Error{Code: events.CodeBudgetExceeded,
			Message: fmt.Sprintf("%s: %d steps not run", spent, waiting)}, CauseAdvance)
	}
	if cp.BudgetHeld {
		return true, nil
	}
	cp.BudgetHeld = true
	return true, x.emit(events.TypeStatus, "", events.Status{State: events.StateInputRequired,
		Message: fmt.Sprintf("budget: %s; %d steps wait: approve (POST /v1/workflows/%s/approve) to go on without the bound, or reject to end it",
			spent, waiting, cp.WorkflowID)})
}

// stopOthers asks for the workflow's steps still running to be stopped
// (Effects.StopSteps) when it ends while some run: their work would be
// thrown away. A resume clears the cancel record and runs them again.
func (x *tx) stopOthers(reason string) {
	for _, t := range x.cp.Tasks {
		if t.Status == events.StateWorking {
			x.eff.StopSteps = reason
			return
		}
	}
}
