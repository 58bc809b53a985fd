package schedule

import (
	"slices"
	"time"
)

// Decision is what a fire does, by Decide.
type Decision int

// The decisions.
const (
	// Start starts the slot's run.
	Start Decision = iota
	// Skip skips the slot.
	Skip
	// Wait holds the slot's run until the previous run ends (buffer_one).
	Wait
	// CancelThenStart cancels the previous run, then starts the slot's.
	CancelThenStart
)

var decisionNames = [...]string{"start", "skip", "wait", "cancel-then-start"}

func (d Decision) String() string {
	if int(d) < len(decisionNames) {
		return decisionNames[d]
	}
	return "unknown"
}

// Decide is the overlap policy: what the fire of run does, given whether
// the schedule's previous run is still running and which run, if any,
// waits for it (buffer_one's one).
func Decide(o Overlap, previousRunning bool, buffered, run string) Decision {
	if !previousRunning {
		return Start
	}
	switch o {
	case OverlapAllowAll:
		return Start
	case OverlapCancelPrevious:
		return CancelThenStart
	case OverlapBufferOne:
		if buffered == "" || buffered == run {
			return Wait
		}
	}
	return Skip
}

// recentRuns is how many run ids State remembers, so that a fire
// delivered again is not counted again.
const recentRuns = 32

// State is what a schedule's fires did: counts and the last run. The
// orchestrators write it (compare-and-set); GET shows it.
type State struct {
	// Fires counts the fires handled (a paused schedule's or a stale
	// generation's are not).
	Fires   uint64 `json:"fires"`
	Started uint64 `json:"started"`
	Skipped uint64 `json:"skipped"`
	// Canceled counts the runs cancel_previous canceled.
	Canceled   uint64     `json:"canceled"`
	LastFireAt *time.Time `json:"last_fire_at,omitempty"`
	LastSlot   *time.Time `json:"last_slot,omitempty"`
	// LastScheduled is the newest scheduled slot handled, started or
	// skipped: where a catch-up starts from (Timing.Missed).
	LastScheduled  *time.Time `json:"last_scheduled,omitempty"`
	LastWorkflowID string     `json:"last_workflow_id,omitempty"`
	LastStartedAt  *time.Time `json:"last_started_at,omitempty"`
	// LastSkip says why the last skipped slot was.
	LastSkip string `json:"last_skip,omitempty"`
	// Buffered is the run that waits for the previous one (buffer_one).
	Buffered string `json:"buffered,omitempty"`
	// Recent are the last runs started, newest last.
	Recent []string `json:"recent,omitempty"`
}

// Has reports whether run was started (among the recent runs).
func (s *State) Has(run string) bool { return slices.Contains(s.Recent, run) }

// Started records run started for slot at now; the last run moves only
// forward in slots (a backfill's runs may end in any order).
func (s *State) Start(run string, slot, now time.Time) {
	s.Started++
	s.Recent = append(s.Recent, run)
	if len(s.Recent) > recentRuns {
		s.Recent = s.Recent[len(s.Recent)-recentRuns:]
	}
	if s.Buffered == run {
		s.Buffered = ""
	}
	if s.LastSlot == nil || !slot.Before(*s.LastSlot) {
		s.LastSlot, s.LastWorkflowID, s.LastStartedAt = &slot, run, &now
	}
}
