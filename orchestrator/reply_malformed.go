package orchestrator

import (
	"context"
	"fmt"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// malformedReply fails the step a reply was meant to answer when the reply
// cannot be decoded — most likely an agent outside Go that left out a
// header or a required field. The bus has logged and terminated it; without
// this the workflow would wait for an answer that never comes, and the
// agent's author would learn why only from a server log. The step is named
// by the subject's workflow and the ce-stepid header (without one nothing
// can be failed, and the log is all there is); the attempt is the task's
// live one, since the data that carries it is what failed to decode.
func (o *Orchestrator) malformedReply(ctx context.Context, subject string, header map[string][]string, cause error) {
	p, err := subjects.Parse(subject)
	if err != nil || p.Kind != "reply" {
		return
	}
	step := first(header, events.HeaderStep)
	if step == "" || subjects.ValidStep(step) != nil {
		o.log.Warn("malformed reply names no step (ce-stepid): no step can be failed", "subject", subject, "err", cause)
		return
	}
	source := first(header, events.HeaderSource)
	if source == "" {
		source = "an agent"
	}
	_, err = o.apply(ctx, p.Tenant, p.Last, workflow.MalformedReply{StepID: step,
		Error: fmt.Sprintf("malformed reply from %s on %s: %v", source, subject, cause)})
	if err != nil && !isNotFound(err) {
		o.log.Warn("failing the step of a malformed reply", "subject", subject, "step", step, "err", err)
	}
}
