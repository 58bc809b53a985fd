package orchestrator

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbus/agentbus/bus"
)

// casOp is what a casUpdate change does with the key.
type casOp int

const (
	casSkip   casOp = iota // nothing to write
	casPut                 // write the new value
	casDelete              // delete the key (fenced at the revision read)
)

// casUpdate reads key, lets change decide from its value (found false
// when there is none) and writes with compare-and-set; on a conflict it
// reads again, from the bucket's leader, up to maxConflicts times. what
// names the key in errors ("concurrency key").
func casUpdate(ctx context.Context, kv *bus.KV, key, what string, change func(value []byte, found bool) ([]byte, casOp, error)) error {
	get := kv.Get
	for range maxConflicts {
		var value []byte
		var rev uint64
		e, err := get(ctx, key)
		switch {
		case isNotFound(err):
		case err != nil:
			return err
		default:
			value, rev = e.Value, e.Revision
		}
		next, op, err := change(value, rev != 0)
		if err != nil {
			return fmt.Errorf("orchestrator: %s %s: %w", what, key, err)
		}
		switch {
		case op == casSkip, op == casDelete && rev == 0:
			return nil
		case op == casDelete:
			err = kv.DeleteIf(ctx, key, rev)
		case rev == 0:
			_, err = kv.Create(ctx, key, next)
		default:
			_, err = kv.Update(ctx, key, next, rev)
		}
		if errors.Is(err, bus.ErrConflict) {
			get = kv.GetCurrent
			continue
		}
		return err
	}
	return fmt.Errorf("orchestrator: %s %s: %w after %d attempts", what, key, bus.ErrConflict, maxConflicts)
}
