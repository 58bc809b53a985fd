package subjects

import (
	"fmt"
	"strings"
)

// Names of flow control (#23): the queue where a step waits for admission
// to a busy capability, one subject per tenant, capability and priority,
// and the leases of the admission loops, one per capability. Only
// orchestrators read and write them; workers never see them.
const (
	// StreamQueue holds steps waiting for admission (work-queue retention).
	StreamQueue = "AGENTBUS_QUEUE"
	// AllQueued is StreamQueue's subjects.
	AllQueued = Root + ".*.queue.*.*"
	// LeaseAdmitPrefix prefixes, in BucketLeases, the lease of a
	// capability's admission loop: "admit-<capability>".
	LeaseAdmitPrefix = "admit-"
)

// Queue returns "agentbus.<tenant>.queue.<capability>.<priority>", where a
// step of that tenant and priority (1–5) waits for admission.
func Queue(tenant, capability string, priority int) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	if err := ValidCapability(capability); err != nil {
		return "", err
	}
	if priority < 1 || priority > 5 {
		return "", fmt.Errorf("%w: priority %d is not 1–5", ErrInvalidToken, priority)
	}
	return fmt.Sprintf("%s.%s.queue.%s.%d", Root, tenant, capability, priority), nil
}

// QueueFilter returns "agentbus.*.queue.<capability>.*": every tenant's
// queued steps of one capability.
func QueueFilter(capability string) (string, error) {
	if err := ValidCapability(capability); err != nil {
		return "", err
	}
	return Root + ".*.queue." + capability + ".*", nil
}

// ParseQueue returns the tenant, capability and priority of a queue
// subject.
func ParseQueue(subject string) (tenant, capability string, priority int, err error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 || parts[0] != Root || parts[2] != "queue" || len(parts[4]) != 1 || parts[4][0] < '1' || parts[4][0] > '5' {
		return "", "", 0, fmt.Errorf("%w: %q is not a queue subject", ErrNotAgentbus, subject)
	}
	if err := ValidTenant(parts[1]); err != nil {
		return "", "", 0, err
	}
	if err := ValidCapability(parts[3]); err != nil {
		return "", "", 0, err
	}
	return parts[1], parts[3], int(parts[4][0] - '0'), nil
}

// QueueConsumer returns the name of the admission loop's consumer of one
// tenant's queued steps of a capability at a priority: "queue~<capability>~<tenant>~<priority>"
// ("~" because both tokens may hold "-" and "_").
func QueueConsumer(tenant, capability string, priority int) (string, error) {
	if _, err := Queue(tenant, capability, priority); err != nil {
		return "", err
	}
	return fmt.Sprintf("queue~%s~%s~%d", capability, tenant, priority), nil
}
