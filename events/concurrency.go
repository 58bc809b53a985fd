package events

import "fmt"

// Concurrency limits how many workflows of one tenant that share Key run
// at once (#23), and says what a submission over the limit does. It is
// plain data, safe to share.
type Concurrency struct {
	// Key names what the workflows share (a user, a session): 1–128
	// characters, any.
	Key string `json:"key"`
	// Limit is how many run at once; 0 reads as 1.
	Limit int `json:"limit,omitempty"`
	// Policy is ConcurrencyQueue (the default, ""),
	// ConcurrencyCancelNewest or ConcurrencyCancelInProgress.
	Policy string `json:"policy,omitempty"`
}

// The policies of a Concurrency key at its limit.
const (
	// ConcurrencyQueue: the new workflow is created and waits, planned
	// with nothing dispatched, until a running one with the key ends; the
	// waiting ones start in submission order.
	ConcurrencyQueue = "queue"
	// ConcurrencyCancelNewest: the new workflow is created canceled.
	ConcurrencyCancelNewest = "cancel_newest"
	// ConcurrencyCancelInProgress: the oldest running one(s) are canceled
	// (as a user's cancel) and the new one starts.
	ConcurrencyCancelInProgress = "cancel_in_progress"
)

// MaxConcurrencyKey bounds a Concurrency key's length.
const MaxConcurrencyKey = 128

// EffectiveLimit is the limit, 1 when unset.
func (c Concurrency) EffectiveLimit() int { return max(c.Limit, 1) }

// EffectivePolicy is the policy, ConcurrencyQueue when unset.
func (c Concurrency) EffectivePolicy() string {
	if c.Policy == "" {
		return ConcurrencyQueue
	}
	return c.Policy
}

// Validate checks a Concurrency as a decoder must: the schema says the
// same to an HTTP client.
func (c Concurrency) Validate() error {
	switch {
	case c.Key == "" || len(c.Key) > MaxConcurrencyKey:
		return fmt.Errorf("events: concurrency key must have 1–%d characters", MaxConcurrencyKey)
	case c.Limit < 0:
		return fmt.Errorf("events: concurrency limit %d is negative", c.Limit)
	}
	switch c.Policy {
	case "", ConcurrencyQueue, ConcurrencyCancelNewest, ConcurrencyCancelInProgress:
		return nil
	}
	return fmt.Errorf("events: unknown concurrency policy %q", c.Policy)
}

// The double-text policies of a session (LangGraph's names): what a turn
// submitted while the session's previous turn runs does.
const (
	// DoubleTextReject: the new turn is canceled at once.
	DoubleTextReject = "reject"
	// DoubleTextEnqueue: the new turn waits for the running one to end.
	DoubleTextEnqueue = "enqueue"
	// DoubleTextInterrupt: the running turn is canceled (its turn is kept
	// in the session, canceled) and the new one starts.
	DoubleTextInterrupt = "interrupt"
	// DoubleTextRollback: as interrupt, and the canceled turn is not kept
	// in the session.
	DoubleTextRollback = "rollback"
)

// SessionConcurrency is the Concurrency a session's double-text policy
// stands for: key "session:<session>", limit 1. ok is false for no
// policy ("") or an unknown one.
func SessionConcurrency(session, doubleText string) (Concurrency, bool) {
	c := Concurrency{Key: "session:" + session, Limit: 1}
	switch doubleText {
	case DoubleTextReject:
		c.Policy = ConcurrencyCancelNewest
	case DoubleTextEnqueue:
		c.Policy = ConcurrencyQueue
	case DoubleTextInterrupt, DoubleTextRollback:
		c.Policy = ConcurrencyCancelInProgress
	default:
		return Concurrency{}, false
	}
	return c, true
}
