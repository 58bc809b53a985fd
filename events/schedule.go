package events

import "time"

// Kinds of ScheduleFire: who asked for the fire.
const (
	// FireScheduled is the server's fire at a slot of the schedule.
	FireScheduled = "scheduled"
	// FireManual is a manual trigger (POST /v1/schedules/{id}/trigger).
	FireManual = "manual"
	// FireBackfill is one slot of a backfill of a past range.
	FireBackfill = "backfill"
)

// MetadataScheduleID is the metadata key that names the schedule a
// workflow was started by (GET /v1/workflows?schedule_id=).
const MetadataScheduleID = "schedule_id"

// ScheduleFire is the data of TypeScheduleFire. A scheduled fire is one
// message the server copies at every slot, so its Slot is empty: the slot
// is told by the copy's Nats-Schedule-Next header. A manual or backfill
// fire names its slot.
type ScheduleFire struct {
	ScheduleID string     `json:"schedule_id"`
	Kind       string     `json:"kind"`
	Slot       *time.Time `json:"slot,omitempty"`
	// Overlap, when set, overrides the schedule's overlap policy for
	// this fire (a backfill's).
	Overlap string `json:"overlap,omitempty"`
	// Generation is the schedule's generation that armed a scheduled
	// fire: a fire of an older one (a schedule edited meanwhile) is
	// dropped.
	Generation uint64 `json:"generation,omitempty"`
}
