package orchestrator

import "github.com/agentbus/agentbus/events"

// problems lists, in plan order, the steps that settled without an
// output: optional steps that failed after their retries (a failed
// required step, or a rejected one, ends the workflow, so no later step
// hears of it). Every step request carries them, so that an answer can
// say what it had to do without.
func (cp *Checkpoint) problems() []events.StepProblem {
	var out []events.StepProblem
	for _, s := range cp.Plan.Steps {
		if t := cp.Tasks[s.ID]; t != nil && t.Status == events.StateFailed {
			out = append(out, events.StepProblem{StepID: s.ID, Capability: t.Capability, Kind: events.ProblemFailed, Error: t.Error})
		}
	}
	return out
}
