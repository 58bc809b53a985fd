package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/subjects"
)

// Forget removes the turn of workflow from a session: the workflow was
// purged (its retention passed, or it was deleted), and a session must
// not keep what it asked and answered, nor list a turn whose workflow is
// gone. The turns after it are numbered down by one. A rolling summary
// that covered it is written again, extractively, from the turns kept in
// full, so that nothing of the forgotten turn lives on in it (what it said
// of turns no longer kept in full goes with it). A session left with no
// turn is removed. A session or turn that is not there is no error; it
// reports whether it removed a turn.
func (s *Store) Forget(ctx context.Context, tenant, user, id, workflow string) (bool, error) {
	key, err := subjects.SessionKey(tenant, user, id)
	if err != nil {
		return false, err
	}
	kv, err := s.kv(ctx)
	if err != nil {
		return false, err
	}
	for range maxConflicts {
		sess, rev, err := s.get(ctx, kv, key)
		if errors.Is(err, bus.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !sess.remove(ctx, workflow) {
			return false, nil
		}
		if len(sess.Turns) == 0 {
			if err := kv.DeleteIf(ctx, key, rev); errors.Is(err, bus.ErrConflict) {
				continue
			} else if err != nil {
				return false, fmt.Errorf("sessions: forget in %s: %w", id, err)
			}
			if _, err := kv.Purge(ctx, key); err != nil {
				return false, fmt.Errorf("sessions: forget in %s: %w", id, err)
			}
			return true, nil
		}
		sess.UpdatedAt = s.cfg.Now().UTC()
		data, err := json.Marshal(sess)
		if err != nil {
			return false, err
		}
		_, err = kv.Update(ctx, key, data, rev)
		if errors.Is(err, bus.ErrConflict) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("sessions: forget in %s: %w", id, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("sessions: forget in %s: %w after %d attempts", id, bus.ErrConflict, maxConflicts)
}

// remove takes the turn of workflow out of the session, numbers the later
// ones down and rewrites a summary that covered it; it reports whether the
// session had such a turn.
func (s *Session) remove(ctx context.Context, workflow string) bool {
	at := -1
	for i, t := range s.Turns {
		if t.WorkflowID == workflow {
			at = i
			break
		}
	}
	if at < 0 {
		return false
	}
	n := s.Turns[at].N
	s.Turns = append(s.Turns[:at], s.Turns[at+1:]...)
	for i := at; i < len(s.Turns); i++ {
		s.Turns[i].N--
	}
	s.SummaryPending = nil
	if n > s.SummaryCovers {
		return true
	}
	s.SummaryCovers--
	s.Summary, s.SummaryBy = "", ""
	if kept := s.turns(s.Dropped+1, s.SummaryCovers); len(kept) > 0 {
		s.Summary, s.SummaryBy, _ = Extractive{}.Summarize(ctx, "", kept)
	}
	if s.Summary == "" {
		s.SummaryCovers = 0
	}
	return true
}
