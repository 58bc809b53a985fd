package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/events"
)

// PlanError says why a plan was rejected: an events.Code* value, the step at
// fault, and the JSON pointer of the offending field in the submission.
type PlanError struct {
	Code    string
	StepID  string
	Pointer string
	Message string
	// Rule is the tool permissions rule that refused the plan, when one
	// did (Code events.CodePermissionDenied).
	Rule string
}

func (e *PlanError) Error() string { return "workflow: " + e.Message }

// Stages checks a plan's structure and groups its steps into Kahn stages:
// every step's dependencies sit in earlier stages; within a stage, steps keep
// their plan order. Duplicate ids, unknown dependencies and cycles are
// reported as *PlanError.
func Stages(p events.Plan) ([][]string, error) {
	index := make(map[string]int, len(p.Steps))
	for i, s := range p.Steps {
		if _, dup := index[s.ID]; dup {
			return nil, &PlanError{Code: events.CodeInvalidPlan, StepID: s.ID, Pointer: fmt.Sprintf("/plan/steps/%d/id", i),
				Message: fmt.Sprintf("step id %q is used twice", s.ID)}
		}
		index[s.ID] = i
	}
	indegree := make([]int, len(p.Steps))
	dependents := make([][]int, len(p.Steps))
	for i, s := range p.Steps {
		for j, d := range s.DependsOn {
			k, ok := index[d]
			if !ok {
				return nil, &PlanError{Code: events.CodeUnknownDependency, StepID: s.ID, Pointer: fmt.Sprintf("/plan/steps/%d/depends_on/%d", i, j),
					Message: fmt.Sprintf("step %q depends on unknown step %q", s.ID, d)}
			}
			indegree[i]++
			dependents[k] = append(dependents[k], i)
		}
	}
	var stages [][]string
	var ready []int
	for i := range p.Steps {
		if indegree[i] == 0 {
			ready = append(ready, i)
		}
	}
	placed := 0
	for len(ready) > 0 {
		stage := make([]string, len(ready))
		var next []int
		for n, i := range ready {
			stage[n] = p.Steps[i].ID
			for _, k := range dependents[i] {
				if indegree[k]--; indegree[k] == 0 {
					next = append(next, k)
				}
			}
		}
		placed += len(ready)
		stages = append(stages, stage)
		slices.Sort(next)
		ready = next
	}
	if placed < len(p.Steps) {
		cycle := findCycle(p, index, indegree)
		return nil, &PlanError{Code: events.CodeCycle, StepID: cycle[0], Pointer: fmt.Sprintf("/plan/steps/%d/depends_on", index[cycle[0]]),
			Message: "plan has a dependency cycle: " + strings.Join(cycle, " depends on ")}
	}
	return stages, nil
}

// findCycle walks dependencies among the steps Kahn could not place (all of
// which lie on or behind a cycle) until a step repeats, and returns the
// cycle, closed (first step repeated at the end).
func findCycle(p events.Plan, index map[string]int, indegree []int) []string {
	start := -1
	for i, d := range indegree {
		if d > 0 {
			start = i
			break
		}
	}
	seen := map[int]int{}
	var path []int
	for i := start; ; {
		if at, ok := seen[i]; ok {
			var out []string
			for _, k := range path[at:] {
				out = append(out, p.Steps[k].ID)
			}
			return append(out, p.Steps[i].ID)
		}
		seen[i] = len(path)
		path = append(path, i)
		for _, d := range p.Steps[i].DependsOn {
			if k := index[d]; indegree[k] > 0 {
				i = k
				break
			}
		}
	}
}

// SinkSteps are the ids of the steps no other step depends on, in plan
// order.
func SinkSteps(p events.Plan) []string {
	depended := map[string]bool{}
	for _, s := range p.Steps {
		for _, d := range s.DependsOn {
			depended[d] = true
		}
	}
	var out []string
	for _, s := range p.Steps {
		if !depended[s.ID] {
			out = append(out, s.ID)
		}
	}
	return out
}

// PlanStepOf returns a plan's definition of a step.
func PlanStepOf(p events.Plan, id string) (events.PlanStep, bool) {
	for _, s := range p.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return events.PlanStep{}, false
}
