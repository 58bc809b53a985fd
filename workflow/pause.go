package workflow

import (
	"fmt"

	"github.com/agentbus/agentbus/events"
)

// Pausing. A paused workflow (Checkpoint.Paused) dispatches nothing new:
// its running steps finish and their replies are recorded, a wait step
// already waiting completes, but ready steps stay submitted (dispatchReady
// does nothing) until Unpause, which dispatches them. Its status is
// unchanged and its phase is PhasePaused (one waiting for its concurrency
// key stays in PhaseWaiting: Released starts it paused). A workflow that
// ends is no longer paused.

// pause stops the workflow dispatching.
func (x *tx) pause(in Pause) error {
	cp := x.cp
	cp.Paused, cp.PauseReason = true, in.Reason
	x.setStatus(cp.Status, cp.Phase, CausePause)
	x.eff.Message = "paused"
	msg := "paused: running steps finish, nothing new is dispatched until it is unpaused"
	if in.Reason != "" {
		msg = fmt.Sprintf("paused (%s): running steps finish, nothing new is dispatched until it is unpaused", in.Reason)
	}
	return x.emit(events.TypeStatus, "", events.Status{State: cp.Status, Message: msg})
}

// unpause lets a paused workflow dispatch again: what is ready goes out.
func (x *tx) unpause(in Unpause) error {
	cp := x.cp
	cp.Paused, cp.PauseReason = false, ""
	x.eff.Message = "unpaused"
	msg := "unpaused"
	if in.Reason != "" {
		msg += ": " + in.Reason
	}
	if err := x.emit(events.TypeStatus, "", events.Status{State: cp.Status, Message: msg}); err != nil {
		return err
	}
	if waiting(cp) {
		return nil // Released dispatches
	}
	return x.advance(CauseUnpause)
}
