package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// Overlap is what a slot does while the schedule's previous run has not
// ended.
type Overlap string

// The overlap policies.
const (
	// OverlapSkip skips the slot (the default).
	OverlapSkip Overlap = "skip"
	// OverlapBufferOne starts the slot's run once the previous one ended;
	// at most one run waits so, and a slot that finds one waiting is
	// skipped.
	OverlapBufferOne Overlap = "buffer_one"
	// OverlapCancelPrevious cancels the previous run and starts the slot's.
	OverlapCancelPrevious Overlap = "cancel_previous"
	// OverlapAllowAll starts the slot's run whatever runs.
	OverlapAllowAll Overlap = "allow_all"
)

// Valid reports whether o is a policy ("" is not: see Spec.Defaults).
func (o Overlap) Valid() bool {
	switch o {
	case OverlapSkip, OverlapBufferOne, OverlapCancelPrevious, OverlapAllowAll:
		return true
	}
	return false
}

// MinEvery is the shortest interval a schedule may have: the server's.
const MinEvery = time.Second

// MaxJitter bounds Spec.Jitter.
const MaxJitter = 24 * time.Hour

// Template is the workflow a schedule starts: a POST /v1/workflows body
// without its workflow id and session.
type Template struct {
	Query     string            `json:"query,omitempty"`
	Plan      *events.Plan      `json:"plan,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
	Priority  int               `json:"priority,omitempty"`
}

// Spec is a schedule's definition: what POST /v1/schedules takes and GET
// returns (with the State beside it).
type Spec struct {
	ScheduleID string `json:"schedule_id"`
	Cron       string `json:"cron,omitempty"`
	Every      string `json:"every,omitempty"`
	TimeZone   string `json:"time_zone,omitempty"`
	Jitter     string `json:"jitter,omitempty"`
	// CatchupWindow, if set, is how far back slots missed while no
	// server fired (all were down past them) are still started when the
	// schedule fires again, oldest first, each under the overlap policy;
	// older ones are skipped. Without it a missed slot is skipped.
	CatchupWindow string   `json:"catchup_window,omitempty"`
	Overlap       Overlap  `json:"overlap"`
	Paused        bool     `json:"paused"`
	Note          string   `json:"note,omitempty"`
	Workflow      Template `json:"workflow"`
	// User is whom the schedule's workflows run for: the creator's token
	// says, never the body.
	User      string    `json:"user,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Generation counts the times the schedule was armed: a fire of an
	// older generation (the schedule was edited or paused since) is
	// dropped, and each arming has a dedup id of its own.
	Generation uint64 `json:"generation"`
	// ArmedAt is when the schedule was last armed: an interval's slots
	// count from it.
	ArmedAt time.Time `json:"armed_at"`
}

// Defaults fills the fields a request may leave out.
func (s *Spec) Defaults() {
	if s.Overlap == "" {
		s.Overlap = OverlapSkip
	}
}

// Timing is a validated Spec's when: its cron or interval, zone and
// jitter.
type Timing struct {
	Cron     *Cron // nil for an interval
	Every    time.Duration
	Location *time.Location
	Jitter   time.Duration
	// Catchup is Spec.CatchupWindow (0: none).
	Catchup time.Duration
}

// Check validates s beyond its JSON Schema (which the gateway checks
// first) and returns its Timing; a problem is a *schemas.ValidationError
// whose pointers name the fields.
func (s Spec) Check() (Timing, error) {
	var probs []schemas.Problem
	add := func(ptr, format string, a ...any) {
		probs = append(probs, schemas.Problem{Pointer: ptr, Message: fmt.Sprintf(format, a...)})
	}
	var tm Timing
	if err := subjects.ValidSchedule(s.ScheduleID); err != nil {
		add("/schedule_id", "%v", err)
	}
	switch {
	case s.Cron == "" && s.Every == "":
		add("", "a schedule needs cron or every")
	case s.Cron != "" && s.Every != "":
		add("/every", "cron and every exclude each other: give one")
	case s.Cron != "":
		c, err := ParseCron(s.Cron)
		if err != nil {
			add("/cron", "%v", err)
		} else {
			tm.Cron = &c
		}
	default:
		d, err := time.ParseDuration(s.Every)
		switch {
		case err != nil:
			add("/every", "%q is not a duration (30s, 5m, 1h30m)", s.Every)
		case d < MinEvery || d%time.Second != 0:
			add("/every", "%s: want whole seconds, at least %s", d, MinEvery)
		default:
			tm.Every = d
		}
	}
	tm.Location = time.UTC
	if s.TimeZone != "" {
		loc, err := time.LoadLocation(s.TimeZone)
		switch {
		case err != nil:
			add("/time_zone", "%q is not an IANA time zone (Europe/Paris, America/New_York)", s.TimeZone)
		case s.Every != "":
			add("/time_zone", "a time zone applies to cron only: an interval runs every so long wherever it is")
		default:
			tm.Location = loc
		}
	}
	if s.Jitter != "" {
		d, err := time.ParseDuration(s.Jitter)
		if err != nil || d < 0 || d > MaxJitter {
			add("/jitter", "%q: want a duration in [0, %s]", s.Jitter, MaxJitter)
		} else {
			tm.Jitter = d
		}
	}
	if s.CatchupWindow != "" {
		d, err := time.ParseDuration(s.CatchupWindow)
		if err != nil || d < 0 || d > MaxCatchup {
			add("/catchup_window", "%q: want a duration in [0, %s]", s.CatchupWindow, MaxCatchup)
		} else {
			tm.Catchup = d
		}
	}
	if s.Overlap != "" && !s.Overlap.Valid() {
		add("/overlap", "%q: want skip, buffer_one, cancel_previous or allow_all", s.Overlap)
	}
	if s.Workflow.Query == "" && s.Workflow.Plan == nil {
		add("/workflow", "a workflow needs a query or a plan")
	}
	if _, ok := s.Workflow.Metadata[events.MetadataScheduleID]; ok {
		add("/workflow/metadata/"+events.MetadataScheduleID, "is set by the schedule to its id")
	}
	if len(probs) > 0 {
		return tm, &schemas.ValidationError{Schema: schemas.ScheduleRequest, Problems: probs}
	}
	return tm, nil
}

// Pattern is the Nats-Schedule header the server is given.
func (t Timing) Pattern() string {
	if t.Cron != nil {
		return t.Cron.Pattern
	}
	return "@every " + t.Every.String()
}

// TimeZone is the Nats-Schedule-Time-Zone header: "" for UTC.
func (t Timing) TimeZone() string {
	if t.Cron == nil || t.Location == time.UTC {
		return ""
	}
	return t.Location.String()
}

// Next is the first slot after now. An interval's slots are counted from
// anchor (the server counts from when it was armed, rounded to a second).
func (t Timing) Next(now, anchor time.Time) (time.Time, bool) {
	if t.Cron != nil {
		return t.Cron.Next(now, t.Location)
	}
	anchor = anchor.Round(time.Second)
	if now.Before(anchor) {
		return anchor.Add(t.Every), true
	}
	n := now.Sub(anchor)/t.Every + 1
	return anchor.Add(n * t.Every).UTC(), true
}

// MaxCatchup bounds Spec.CatchupWindow.
const MaxCatchup = 366 * 24 * time.Hour

// Missed returns the slots after last and before slot (both slots the
// schedule fired, last the one before) that are no older than its
// catch-up window at now, oldest first, and at most MaxBackfill of them
// (the newest): the slots no server fired because none was up. An
// interval's slots count from anchor (when it was armed), as the
// server's do; a last from before anchor (an earlier arming) counts as
// anchor.
func (t Timing) Missed(last, slot, anchor, now time.Time) []time.Time {
	if t.Catchup <= 0 {
		return nil
	}
	if last.Before(anchor) {
		last = anchor
	}
	from := now.Add(-t.Catchup)
	prev := func(s time.Time) (time.Time, bool) {
		if t.Cron != nil {
			return t.Cron.Prev(s, t.Location)
		}
		return s.Add(-t.Every), true
	}
	// Backwards from slot, so that a long outage costs the window's
	// newest MaxBackfill slots, not a walk over all of it.
	var out []time.Time
	for s, ok := prev(slot); ok && s.After(last) && !s.Before(from) && len(out) < MaxBackfill; s, ok = prev(s) {
		out = append(out, s.UTC())
	}
	slices.Reverse(out)
	return out
}

// ErrRange is returned by Slots for a range it refuses.
var ErrRange = errors.New("schedule: invalid range")

// MaxBackfill bounds the slots of one backfill.
const MaxBackfill = 1000

// Slots returns the slots in [from, to], oldest first: a cron's, or an
// interval's counted from from (rounded up to a second). More than
// MaxBackfill is an error wrapping ErrRange.
func (t Timing) Slots(from, to time.Time) ([]time.Time, error) {
	if to.Before(from) {
		return nil, fmt.Errorf("%w: to %s is before from %s", ErrRange, to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	var out []time.Time
	if t.Cron == nil {
		first := from.Add(time.Second - 1).Truncate(time.Second)
		for s := first; !s.After(to); s = s.Add(t.Every) {
			if len(out) == MaxBackfill {
				return nil, fmt.Errorf("%w: more than %d slots", ErrRange, MaxBackfill)
			}
			out = append(out, s.UTC())
		}
		return out, nil
	}
	s, ok := t.Cron.Next(from.Add(-time.Nanosecond), t.Location)
	for ; ok && !s.After(to); s, ok = t.Cron.Next(s, t.Location) {
		if len(out) == MaxBackfill {
			return nil, fmt.Errorf("%w: more than %d slots", ErrRange, MaxBackfill)
		}
		out = append(out, s.UTC())
	}
	return out, nil
}

// SlotOf returns the slot a scheduled fire is for, from its
// Nats-Schedule-Next header (when the server fires next): the slot before
// that, a cron's or one interval earlier. The header is the same on every
// delivery of one fire, and strictly later from one fire to the next, so
// each fire has a slot of its own.
func (t Timing) SlotOf(next string) (time.Time, error) {
	n, err := time.Parse(time.RFC3339Nano, next)
	if err != nil {
		return time.Time{}, fmt.Errorf("schedule: fire's Nats-Schedule-Next %q: %w", next, err)
	}
	if t.Cron == nil {
		return n.Add(-t.Every).Round(time.Second).UTC(), nil
	}
	p, ok := t.Cron.Prev(n, t.Location)
	if !ok {
		return n.Add(-time.Second).Truncate(time.Second).UTC(), nil
	}
	return p.UTC(), nil
}

// Delay is the jitter of a slot's run: a delay in [0, Jitter) fixed by
// the schedule and slot, so that every orchestrator and every delivery
// agrees on it.
func (t Timing) Delay(scheduleID string, slot time.Time) time.Duration {
	if t.Jitter <= 0 {
		return 0
	}
	h := sha256.Sum256([]byte(scheduleID + "/" + strconv.FormatInt(slot.Unix(), 10)))
	return time.Duration(binary.BigEndian.Uint64(h[:8]) % uint64(t.Jitter))
}

// RunID is the workflow id of a schedule's run for a slot:
// "<schedule>-<unix seconds>"; a manual trigger's is
// "<schedule>-manual-<unix milliseconds>", so that it never takes a
// slot's.
func RunID(scheduleID, kind string, slot time.Time) string {
	if kind == events.FireManual {
		return scheduleID + "-manual-" + strconv.FormatInt(slot.UnixMilli(), 10)
	}
	return scheduleID + "-" + strconv.FormatInt(slot.Unix(), 10)
}
