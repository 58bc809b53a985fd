package subjects

import (
	"errors"
	"fmt"
	"strings"
)

// Submit returns "agentbus.<tenant>.workflow.submit".
func Submit(tenant string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	return Root + "." + tenant + ".workflow.submit", nil
}

// Step returns "agentbus.<tenant>.step.<capability>".
func Step(tenant, capability string) (string, error) {
	return join(tenant, "step", "capability", capability)
}

// Reply returns "agentbus.<tenant>.reply.<workflow>".
func Reply(tenant, workflow string) (string, error) {
	return join(tenant, "reply", "workflow", workflow)
}

// Result returns "agentbus.<tenant>.result.<workflow>": where a worker
// hands a step's answer straight to an orchestrator as a core NATS
// request. No stream captures it; the reply subject is the durable way.
func Result(tenant, workflow string) (string, error) {
	return join(tenant, "result", "workflow", workflow)
}

// Live returns "agentbus.<tenant>.live.<workflow>": where the events
// stream republishes each event of the workflow once it is stored, with
// its sequence and the sequence of the workflow's event before it
// (Nats-Sequence, Nats-Last-Sequence), so that a follower needs no
// consumer. No stream captures it.
func Live(tenant, workflow string) (string, error) {
	return join(tenant, "live", "workflow", workflow)
}

// Events returns "agentbus.<tenant>.events.<workflow>".
func Events(tenant, workflow string) (string, error) {
	return join(tenant, "events", "workflow", workflow)
}

// Control returns "agentbus.<tenant>.control.<workflow>".
func Control(tenant, workflow string) (string, error) {
	return join(tenant, "control", "workflow", workflow)
}

// Documents returns "agentbus.<tenant>.documents.<op>": the request
// subject of a document operation (list, get, delete) on the tenant's
// index, answered by the ingest agents.
func Documents(tenant, op string) (string, error) {
	return join(tenant, "documents", "operation", op)
}

// DocumentsFilter returns "agentbus.*.documents.<op>", what the ingest
// agents listen on for every tenant.
func DocumentsFilter(op string) string { return Root + ".*.documents." + op }

// DeadLetter returns "agentbus.<tenant>.deadletter.<capability>".
func DeadLetter(tenant, capability string) (string, error) {
	return join(tenant, "deadletter", "capability", capability)
}

func join(tenant, kind, field, last string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	if err := check(field, last); err != nil {
		return "", err
	}
	return Root + "." + tenant + "." + kind + "." + last, nil
}

// StepFilter returns the consumer filter "agentbus.*.step.<capability>": one
// durable consumer per capability serves every tenant.
func StepFilter(capability string) (string, error) {
	if err := ValidCapability(capability); err != nil {
		return "", err
	}
	return Root + ".*.step." + capability, nil
}

// StepConsumer returns the durable consumer name shared by every worker of a capability.
func StepConsumer(capability string) (string, error) {
	if err := ValidCapability(capability); err != nil {
		return "", err
	}
	return "step-" + capability, nil
}

// CheckpointKey returns the KV key "<tenant>.<workflow>" used in
// BucketCheckpoints and BucketControl.
func CheckpointKey(tenant, workflow string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	if err := ValidWorkflow(workflow); err != nil {
		return "", err
	}
	return tenant + "." + workflow, nil
}

// ErrNotAgentbus is returned by Parse for a subject outside the agentbus namespace.
var ErrNotAgentbus = errors.New("subjects: not an agentbus subject")

// Parsed is a subject split into its parts.
type Parsed struct {
	Tenant string
	Kind   string // "workflow", "step", "reply", "result", "events", "live", "control", "deadletter", "documents", …
	Last   string // capability, workflow id or document operation; "submit" for submissions
}

// Parse splits an agentbus subject and validates every token.
func Parse(subject string) (Parsed, error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 4 || parts[0] != Root {
		return Parsed{}, fmt.Errorf("%w: %q", ErrNotAgentbus, subject)
	}
	p := Parsed{Tenant: parts[1], Kind: parts[2], Last: parts[3]}
	if err := ValidTenant(p.Tenant); err != nil {
		return Parsed{}, err
	}
	switch p.Kind {
	case "workflow":
		if p.Last != "submit" {
			return Parsed{}, fmt.Errorf("%w: %q", ErrNotAgentbus, subject)
		}
	case "step", "deadletter":
		if err := ValidCapability(p.Last); err != nil {
			return Parsed{}, err
		}
	case "reply", "result", "events", "live", "control":
		if err := ValidWorkflow(p.Last); err != nil {
			return Parsed{}, err
		}
	case "schedule", "fire":
		if err := ValidSchedule(p.Last); err != nil {
			return Parsed{}, err
		}
	case "documents":
		if err := check("operation", p.Last); err != nil {
			return Parsed{}, err
		}
	default:
		return Parsed{}, fmt.Errorf("%w: %q", ErrNotAgentbus, subject)
	}
	return p, nil
}

// AgentCard returns "agentbus-agents.<capability>", the micro-service
// endpoint where every worker of a capability answers with its card and
// live stats (a queue group: one of them answers).
func AgentCard(capability string) (string, error) {
	if err := ValidCapability(capability); err != nil {
		return "", err
	}
	return AgentsRoot + "." + capability, nil
}
