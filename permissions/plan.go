package permissions

import (
	"errors"
	"fmt"

	"github.com/agentbus/agentbus/events"
)

// DeniedError is a plan step the table refuses: the step, where its
// capability is in the submission, and the rule.
type DeniedError struct {
	Index      int
	StepID     string
	Capability string
	// Field is "capability" or "fallback": which of the step's
	// capabilities is refused.
	Field string
	Rule  string
}

// Pointer is the JSON pointer of the refused capability in the
// submission: /plan/steps/<i>/capability (or /fallback).
func (e *DeniedError) Pointer() string { return fmt.Sprintf("/plan/steps/%d/%s", e.Index, e.Field) }

func (e *DeniedError) Error() string {
	return fmt.Sprintf("permissions: step %q may not run %s: refused by the tool permissions rule %s", e.StepID, e.Capability, e.Rule)
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// ErrDenied is what every *DeniedError matches with errors.Is.
var ErrDenied = errors.New("permissions: denied")

// Plan checks every step of p — its capability and its fallback — for a
// workflow of tenant submitted with role: the first step refused is a
// *DeniedError; otherwise it returns, by step id, the rule of each step
// that must be confirmed before it runs (nil when none must).
func (t Table) Plan(tenant, role string, p events.Plan) (map[string]string, error) {
	var confirm map[string]string
	for i, s := range p.Steps {
		for _, f := range []struct{ field, capability string }{{"capability", s.Capability}, {"fallback", s.Fallback}} {
			if f.capability == "" {
				continue
			}
			d := t.Check(tenant, role, f.capability)
			switch d.Verdict {
			case Denied:
				return nil, &DeniedError{Index: i, StepID: s.ID, Capability: f.capability, Field: f.field, Rule: d.Rule}
			case Confirm:
				if confirm == nil {
					confirm = map[string]string{}
				}
				if _, seen := confirm[s.ID]; !seen {
					confirm[s.ID] = d.Rule
				}
			}
		}
	}
	return confirm, nil
}
