package api

import (
	"context"
	"fmt"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Publisher publishes an event to a JetStream subject with a dedup key
// (Nats-Msg-Id) and returns the stream's acknowledgement, an A: *bus.Bus
// is one, its A a bus.Published. The acknowledgement is a type parameter
// so that the bus satisfies the interface as it is while this package
// does not import it.
type Publisher[A any] interface {
	Publish(ctx context.Context, subject string, env events.Envelope, msgID string) (A, error)
}

// Submit publishes sub as the submission of the workflow of id workflow for
// tenant: a workflow.submitted event from source on the tenant's submit
// subject, with the dedup key events.SubmitKey(tenant, workflow), so that
// the same workflow submitted again within the stream's dedup window (a
// retry after a lost ack, a client asking again) is stored once. It is the
// one place a submission is built: the gateway's HTTP and A2A front doors
// and the SDK's NATS client all call it.
//
// workflow must be chosen by then (a valid id); that no such workflow
// exists yet is the caller's to check, with what it has at hand. The
// answer is a stored submission's SubmitResponse: status queued and the
// events subject, without URLs (the gateway, which serves them, adds
// them). An invalid tenant or workflow id is refused before anything is
// published; an error of p is returned as it is, so that the caller's
// message says what the bus said.
func Submit[A any](ctx context.Context, p Publisher[A], source, tenant, workflow string, sub events.WorkflowSubmitted) (SubmitResponse, error) {
	subj, err := subjects.Submit(tenant)
	if err != nil {
		return SubmitResponse{}, fmt.Errorf("api: submit: %w", err)
	}
	evSubj, err := subjects.Events(tenant, workflow)
	if err != nil {
		return SubmitResponse{}, fmt.Errorf("api: submit: %w", err)
	}
	msgID := events.SubmitKey(tenant, workflow)
	env, err := events.New(events.TypeWorkflowSubmitted, msgID, source, tenant, workflow, "", sub)
	if err != nil {
		return SubmitResponse{}, fmt.Errorf("api: %w", err)
	}
	if _, err := p.Publish(ctx, subj, env, msgID); err != nil {
		return SubmitResponse{}, err
	}
	return SubmitResponse{WorkflowID: workflow, TenantID: tenant, Status: StatusQueued, EventsSubject: evSubj}, nil
}
