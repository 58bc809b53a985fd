package subjects

import "fmt"

// Names of schedules (#25): a schedule's definition and state in a
// bucket, its repeating message schedule and its fires in a stream that
// only the gateway (which arms schedules) and orchestrators (which fire
// them) use.
const (
	// BucketSchedules holds each schedule's definition (ScheduleKey) and
	// its state (ScheduleStateKey), apart so that an edit and a fire never
	// contend for one revision.
	BucketSchedules = "AGENTBUS_SCHEDULES"
	// StreamSchedules holds every armed schedule as a repeating message
	// schedule (nats-server 2.12 or later) on its Schedule subject, which
	// the server fires at each slot onto the schedule's Fire subject, and
	// those fires until an orchestrator has handled them (work-queue
	// retention: a message schedule is never consumed, so it stays).
	StreamSchedules = "AGENTBUS_SCHEDULES"
	// AllSchedules is the filter of the armed schedules.
	AllSchedules = Root + ".*.schedule.*"
	// AllFires is the filter of the fires: what ConsumerFires reads.
	AllFires = Root + ".*.fire.*"
	// ConsumerFires is the orchestrators' shared consumer on
	// StreamSchedules: each fire goes to one of them.
	ConsumerFires = "orchestrator-schedules"
	// MaxScheduleID is the length bound of a schedule id: the workflows
	// it starts are named "<schedule>-<slot>" and must stay tokens.
	MaxScheduleID = 40
)

// ValidSchedule reports whether id is a valid schedule id: a token (as a
// workflow id) of at most MaxScheduleID characters.
func ValidSchedule(id string) error {
	if err := check("schedule", id); err != nil {
		return err
	}
	if len(id) > MaxScheduleID {
		return fmt.Errorf("%w: schedule id %q is longer than %d characters", ErrInvalidToken, id, MaxScheduleID)
	}
	return nil
}

// Schedule returns "agentbus.<tenant>.schedule.<id>", where a schedule's
// repeating message schedule is stored while it is armed.
func Schedule(tenant, id string) (string, error) {
	if err := ValidSchedule(id); err != nil {
		return "", err
	}
	return join(tenant, "schedule", "schedule", id)
}

// Fire returns "agentbus.<tenant>.fire.<id>", where a schedule's fires
// (the server's at each slot, a manual trigger's, a backfill's) wait for
// an orchestrator.
func Fire(tenant, id string) (string, error) {
	if err := ValidSchedule(id); err != nil {
		return "", err
	}
	return join(tenant, "fire", "schedule", id)
}

// ScheduleKey returns the BucketSchedules key "<tenant>.<id>" of a
// schedule's definition.
func ScheduleKey(tenant, id string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	if err := ValidSchedule(id); err != nil {
		return "", err
	}
	return tenant + "." + id, nil
}

// ScheduleStateKey returns the BucketSchedules key "<tenant>.<id>.state"
// of a schedule's state (its fires so far).
func ScheduleStateKey(tenant, id string) (string, error) {
	k, err := ScheduleKey(tenant, id)
	if err != nil {
		return "", err
	}
	return k + ".state", nil
}
