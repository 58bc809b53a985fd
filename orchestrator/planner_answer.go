package orchestrator

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// answerStepID is the id of the answer step withAnswer adds.
const answerStepID = "answer"

// composers are the capabilities that write an answer from other steps'
// outputs (agents/compose).
var composers = []string{CapabilitySummarize, CapabilityDetailedReport}

// withAnswer ends a planned plan of several steps with an answer step
// when none of its sink steps writes one and a composer is registered:
// a summarize step (detailed_report for a complex query, when
// registered) that depends on every sink, so that whatever agents a
// planner chose, the result is one cited answer over all their outputs,
// saying which failed. A one-step plan is left alone: naming a
// capability is asking for its output. Submitted plans are the caller's
// and are never changed.
func (o *Orchestrator) withAnswer(ctx context.Context, p events.Plan, query string) (events.Plan, string) {
	if len(p.Steps) < 2 {
		return p, ""
	}
	sinks := workflow.SinkSteps(p)
	for _, id := range sinks {
		if s, _ := workflow.PlanStepOf(p, id); slices.Contains(composers, s.Capability) {
			return p, ""
		}
	}
	capability := CapabilitySummarize
	if Classify(query).Complex {
		if ok, err := o.cfg.Catalog(ctx, CapabilityDetailedReport); err == nil && ok {
			capability = CapabilityDetailedReport
		}
	}
	if ok, err := o.cfg.Catalog(ctx, capability); err != nil || !ok {
		return p, ""
	}
	id := answerStepID
	for n := 2; slices.ContainsFunc(p.Steps, func(s events.PlanStep) bool { return s.ID == id }); n++ {
		id = fmt.Sprintf("%s-%d", answerStepID, n)
	}
	out := events.Plan{Steps: slices.Clone(p.Steps)}
	out.Steps = append(out.Steps, events.PlanStep{ID: id, Capability: capability, Input: queryInput(query, false), DependsOn: sinks})
	return out, fmt.Sprintf("%s (%s) answers from %v", id, capability, sinks)
}
