package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Errors of Store.
var (
	// ErrNotFound is returned for a schedule that does not exist.
	ErrNotFound = errors.New("schedule: no such schedule")
	// ErrExists is returned by Create for an id already taken.
	ErrExists = errors.New("schedule: schedule exists")
)

// Store keeps schedules in subjects.BucketSchedules and arms them in
// subjects.StreamSchedules. It is safe for concurrent use; every process
// may open its own.
type Store struct {
	bus    *bus.Bus
	kv     *bus.KV
	source string
}

// Open opens (creating if need be) the schedules' bucket and stream.
// source is the CloudEvents source of the fires it publishes.
func Open(ctx context.Context, b *bus.Bus, source string) (*Store, error) {
	if err := b.EnsureSchedules(ctx); err != nil {
		return nil, err
	}
	kv, err := b.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	return &Store{bus: b, kv: kv, source: source}, nil
}

// Get returns a schedule's Spec and its revision.
func (s *Store) Get(ctx context.Context, tenant, id string) (Spec, uint64, error) {
	key, err := subjects.ScheduleKey(tenant, id)
	if err != nil {
		return Spec{}, 0, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	e, err := s.kv.GetCurrent(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		return Spec{}, 0, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Spec{}, 0, err
	}
	var sp Spec
	if err := json.Unmarshal(e.Value, &sp); err != nil {
		return Spec{}, 0, fmt.Errorf("schedule: %s: %w", key, err)
	}
	return sp, e.Revision, nil
}

// List returns the tenant's schedules in id order.
func (s *Store) List(ctx context.Context, tenant string) ([]Spec, error) {
	if err := subjects.ValidTenant(tenant); err != nil {
		return nil, err
	}
	es, err := s.kv.ListMatching(ctx, tenant+".*")
	if err != nil {
		return nil, err
	}
	out := []Spec{}
	for _, e := range es {
		var sp Spec
		if json.Unmarshal(e.Value, &sp) == nil {
			out = append(out, sp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ScheduleID < out[j].ScheduleID })
	return out, nil
}

// Create stores a new schedule (checked: Spec.Check) and arms it unless
// it is paused. now stamps it.
func (s *Store) Create(ctx context.Context, tenant string, sp Spec, now time.Time) (Spec, error) {
	sp.Defaults()
	tm, err := sp.Check()
	if err != nil {
		return Spec{}, err
	}
	key, err := subjects.ScheduleKey(tenant, sp.ScheduleID)
	if err != nil {
		return Spec{}, err
	}
	sp.CreatedAt, sp.UpdatedAt, sp.ArmedAt, sp.Generation = now.UTC(), now.UTC(), now.UTC(), 1
	b, _ := json.Marshal(sp)
	if _, err := s.kv.Create(ctx, key, b); errors.Is(err, bus.ErrConflict) {
		return Spec{}, fmt.Errorf("%w: %s", ErrExists, sp.ScheduleID)
	} else if err != nil {
		return Spec{}, err
	}
	if sp.Paused {
		return sp, nil
	}
	if err := s.arm(ctx, tenant, sp, tm); err != nil {
		_ = s.kv.Delete(ctx, key)
		return Spec{}, err
	}
	return sp, nil
}

// Update changes a schedule with fn (compare-and-set, retried on a
// conflict), checks the result and arms or disarms it as it now needs:
// a change of its timing or an unpause arms it again (a new generation),
// a pause disarms it.
func (s *Store) Update(ctx context.Context, tenant, id string, now time.Time, fn func(*Spec) error) (Spec, error) {
	key, err := subjects.ScheduleKey(tenant, id)
	if err != nil {
		return Spec{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	for {
		old, rev, err := s.Get(ctx, tenant, id)
		if err != nil {
			return Spec{}, err
		}
		sp := old
		if err := fn(&sp); err != nil {
			return Spec{}, err
		}
		sp.ScheduleID, sp.CreatedAt, sp.User = old.ScheduleID, old.CreatedAt, old.User
		sp.Defaults()
		tm, err := sp.Check()
		if err != nil {
			return Spec{}, err
		}
		rearm := !sp.Paused && (old.Paused || old.Cron != sp.Cron || old.Every != sp.Every || old.TimeZone != sp.TimeZone)
		if rearm {
			sp.Generation, sp.ArmedAt = old.Generation+1, now.UTC()
		}
		sp.UpdatedAt = now.UTC()
		b, _ := json.Marshal(sp)
		if _, err := s.kv.Update(ctx, key, b, rev); errors.Is(err, bus.ErrConflict) {
			continue
		} else if err != nil {
			return Spec{}, err
		}
		switch {
		case rearm:
			err = s.arm(ctx, tenant, sp, tm)
		case sp.Paused && !old.Paused:
			err = s.disarm(ctx, tenant, id)
		}
		return sp, err
	}
}

// Delete disarms a schedule and removes it with its state. Runs it
// started are left alone.
func (s *Store) Delete(ctx context.Context, tenant, id string) error {
	if _, _, err := s.Get(ctx, tenant, id); err != nil {
		return err
	}
	if err := s.disarm(ctx, tenant, id); err != nil {
		return err
	}
	key, _ := subjects.ScheduleKey(tenant, id)
	skey, _ := subjects.ScheduleStateKey(tenant, id)
	if _, err := s.kv.Purge(ctx, skey); err != nil {
		return err
	}
	_, err := s.kv.Purge(ctx, key)
	return err
}

// Armed reports whether a schedule's message schedule is stored.
func (s *Store) Armed(ctx context.Context, tenant, id string) (bool, error) {
	subj, err := subjects.Schedule(tenant, id)
	if err != nil {
		return false, err
	}
	_, ok, err := s.bus.ArmedSchedule(ctx, subj)
	return ok, err
}

// State returns a schedule's state (zero before its first fire) and its
// revision (0 then).
func (s *Store) State(ctx context.Context, tenant, id string) (State, uint64, error) {
	key, err := subjects.ScheduleStateKey(tenant, id)
	if err != nil {
		return State{}, 0, err
	}
	e, err := s.kv.GetCurrent(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		return State{}, 0, nil
	}
	if err != nil {
		return State{}, 0, err
	}
	var st State
	if err := json.Unmarshal(e.Value, &st); err != nil {
		return State{}, 0, fmt.Errorf("schedule: %s: %w", key, err)
	}
	return st, e.Revision, nil
}

// UpdateState changes a schedule's state with fn (compare-and-set,
// retried on a conflict); fn returning false writes nothing.
func (s *Store) UpdateState(ctx context.Context, tenant, id string, fn func(*State) bool) (State, error) {
	key, err := subjects.ScheduleStateKey(tenant, id)
	if err != nil {
		return State{}, err
	}
	for {
		st, rev, err := s.State(ctx, tenant, id)
		if err != nil {
			return State{}, err
		}
		if !fn(&st) {
			return st, nil
		}
		b, _ := json.Marshal(st)
		if rev == 0 {
			_, err = s.kv.Create(ctx, key, b)
		} else {
			_, err = s.kv.Update(ctx, key, b, rev)
		}
		if errors.Is(err, bus.ErrConflict) {
			continue
		}
		return st, err
	}
}

// Trigger fires a schedule now, whether paused or not: its run is
// RunID(id, manual, now), which it returns.
func (s *Store) Trigger(ctx context.Context, tenant, id string, now time.Time) (string, error) {
	if _, _, err := s.Get(ctx, tenant, id); err != nil {
		return "", err
	}
	now = now.UTC().Truncate(time.Millisecond)
	f := events.ScheduleFire{ScheduleID: id, Kind: events.FireManual, Slot: &now}
	return RunID(id, events.FireManual, now), s.fire(ctx, tenant, f, "manual."+strconv.FormatInt(now.UnixMilli(), 10))
}

// Backfill fires a schedule once for each of its slots in [from, to]
// (at most MaxBackfill; to not after now), with overlap ("" for the
// schedule's own policy), and returns the runs, oldest first. A slot
// backfilled again, or one that ran, starts no second run.
func (s *Store) Backfill(ctx context.Context, tenant, id string, from, to, now time.Time, overlap Overlap) ([]string, error) {
	sp, _, err := s.Get(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	tm, err := sp.Check()
	if err != nil {
		return nil, err
	}
	if to.After(now) {
		return nil, fmt.Errorf("%w: to %s is in the future", ErrRange, to.Format(time.RFC3339))
	}
	if overlap != "" && !overlap.Valid() {
		return nil, fmt.Errorf("%w: overlap %q", ErrRange, overlap)
	}
	slots, err := tm.Slots(from, to)
	if err != nil {
		return nil, err
	}
	runs := make([]string, 0, len(slots))
	for _, slot := range slots {
		f := events.ScheduleFire{ScheduleID: id, Kind: events.FireBackfill, Slot: &slot, Overlap: string(overlap)}
		if err := s.fire(ctx, tenant, f, "backfill."+strconv.FormatInt(slot.Unix(), 10)); err != nil {
			return runs, err
		}
		runs = append(runs, RunID(id, events.FireBackfill, slot))
	}
	return runs, nil
}

func (s *Store) fire(ctx context.Context, tenant string, f events.ScheduleFire, what string) error {
	subj, err := subjects.Fire(tenant, f.ScheduleID)
	if err != nil {
		return err
	}
	id := tenant + "." + f.ScheduleID + "." + what
	env, err := events.New(events.TypeScheduleFire, id, s.source, tenant, "", "", f)
	if err != nil {
		return err
	}
	_, err = s.bus.Publish(ctx, subj, env, id)
	return err
}

// arm stores sp's repeating message schedule for its generation.
func (s *Store) arm(ctx context.Context, tenant string, sp Spec, tm Timing) error {
	subj, err := subjects.Schedule(tenant, sp.ScheduleID)
	if err != nil {
		return err
	}
	target, err := subjects.Fire(tenant, sp.ScheduleID)
	if err != nil {
		return err
	}
	id := tenant + "." + sp.ScheduleID + ".g" + strconv.FormatUint(sp.Generation, 10) + "." + strconv.FormatInt(sp.UpdatedAt.UnixNano(), 10)
	f := events.ScheduleFire{ScheduleID: sp.ScheduleID, Kind: events.FireScheduled, Generation: sp.Generation}
	env, err := events.New(events.TypeScheduleFire, id, s.source, tenant, "", "", f)
	if err != nil {
		return err
	}
	return s.bus.ArmSchedule(ctx, bus.Arm{Subject: subj, Target: target, Pattern: tm.Pattern(), TimeZone: tm.TimeZone(), Env: env, MsgID: id})
}

func (s *Store) disarm(ctx context.Context, tenant, id string) error {
	subj, err := subjects.Schedule(tenant, id)
	if err != nil {
		return err
	}
	return s.bus.DisarmSchedule(ctx, subj)
}

// NextFire is when a schedule fires next: a paused one never (false).
// An interval's slots count from when it was last armed, as the
// server's do.
func NextFire(sp Spec, now time.Time) (time.Time, bool) {
	if sp.Paused {
		return time.Time{}, false
	}
	tm, err := sp.Check()
	if err != nil {
		return time.Time{}, false
	}
	return tm.Next(now, sp.ArmedAt)
}
