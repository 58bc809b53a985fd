package sessions

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// ErrNotFound is returned (wrapped) by Load for a session that does not
// exist for that tenant and user, or expired.
var ErrNotFound = errors.New("sessions: no such session")

// Config configures a Store. Bus is required; the zero value of every
// other field means its default.
type Config struct {
	Bus *bus.Bus
	// History is how many of the newest turns a Conversation carries in
	// full; default 3.
	History int
	// SummaryEvery is how often, in turns, the rolling summary is
	// brought up to date; default 3.
	SummaryEvery int
	// MaxTurns is how many turns a session keeps in full; older ones are
	// dropped (the summary covers them). Default 50.
	MaxTurns int
	// MaxAnswer cuts each stored answer to this many bytes; default 4000.
	MaxAnswer int
	// MaxCitations drops a turn's citations above this many bytes of JSON;
	// default 16384.
	MaxCitations int
	// Summarizer writes the rolling summary; default Extractive{}. Any
	// other (a model) writes it in Refine, after Append has stored the
	// extractive one; if it fails, the extractive one stands and the
	// failure is logged.
	Summarizer Summarizer
	// SummaryTimeout bounds one summary by Summarizer in Refine; default
	// 10s; past it the extractive summary stands.
	SummaryTimeout time.Duration
	Logger         *slog.Logger
	// Now stamps sessions; default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.History == 0 {
		c.History = 3
	}
	if c.SummaryEvery == 0 {
		c.SummaryEvery = 3
	}
	if c.MaxTurns == 0 {
		c.MaxTurns = 50
	}
	if c.MaxAnswer == 0 {
		c.MaxAnswer = 4000
	}
	if c.MaxCitations == 0 {
		c.MaxCitations = 16384
	}
	if c.Summarizer == nil {
		c.Summarizer = Extractive{}
	}
	if c.SummaryTimeout == 0 {
		c.SummaryTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("sessions: config needs Bus"))
	}
	if c.History < 1 || c.History > 20 {
		errs = append(errs, fmt.Errorf("sessions: history %d not in [1, 20]", c.History))
	}
	if c.SummaryEvery < 1 {
		errs = append(errs, fmt.Errorf("sessions: summary every %d turns: want at least 1", c.SummaryEvery))
	}
	if c.MaxTurns < c.SummaryEvery || c.MaxTurns < c.History {
		errs = append(errs, fmt.Errorf("sessions: max turns %d below the history (%d) or the summary period (%d)", c.MaxTurns, c.History, c.SummaryEvery))
	}
	if c.MaxAnswer < 100 || c.MaxCitations < 0 {
		errs = append(errs, fmt.Errorf("sessions: max answer %d below 100 bytes or max citations %d negative", c.MaxAnswer, c.MaxCitations))
	}
	return errors.Join(errs...)
}

// Session is a conversation: its turns, oldest first, and a rolling
// summary of its first SummaryCovers turns.
type Session struct {
	TenantID  string `json:"tenant_id"`
	User      string `json:"user,omitempty"`
	SessionID string `json:"session_id"`
	// Turns are the turns kept in full; Turns[i].N is Dropped+i+1.
	Turns []events.Turn `json:"turns"`
	// Dropped counts the oldest turns no longer kept in full.
	Dropped int `json:"dropped,omitempty"`
	// Summary sums up turns 1 to SummaryCovers; SummaryBy says who wrote
	// it ("extractive", or the model's name).
	Summary       string `json:"summary,omitempty"`
	SummaryCovers int    `json:"summary_covers,omitempty"`
	SummaryBy     string `json:"summary_by,omitempty"`
	// SummaryPending, when set, is a summary the configured Summarizer
	// still owes (Refine writes it); Summary is the extractive one
	// meanwhile.
	SummaryPending *Refinement `json:"summary_pending,omitempty"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
}

// Refinement is a rolling summary a slow Summarizer (a model) owes: it
// sums up Base (the summary before) and turns From to Covers. Append
// writes the extractive summary at once, so that a model never holds up
// the workflow whose ending appends the turn, and Refine replaces it.
type Refinement struct {
	Base   string `json:"base,omitempty"`
	From   int    `json:"from"`
	Covers int    `json:"covers"`
}

// Count is how many turns the session has had, dropped ones included.
func (s Session) Count() int { return s.Dropped + len(s.Turns) }

// Bounds of a turn in a Conversation: it travels in every step request of
// the next turn and is kept in that workflow's checkpoint revisions, so
// its answer is cut shorter than stored, and large citations are left out
// (GET /v1/sessions/{id} has them in full).
const (
	ConversationAnswer    = 1500
	ConversationCitations = 4096
)

// Conversation is what a step of the session's next turn is told: the
// newest history turns (answers cut to ConversationAnswer bytes,
// citations above ConversationCitations bytes left out) and the summary.
// originalQuery is the query as typed when it was resolved into another
// ("" otherwise).
func (s Session) Conversation(history int, originalQuery string) events.Conversation {
	c := events.Conversation{SessionID: s.SessionID, Summary: s.Summary, OriginalQuery: originalQuery}
	if n := len(s.Turns); n > 0 {
		c.History = append([]events.Turn(nil), s.Turns[max(0, n-history):]...)
	}
	for i := range c.History {
		c.History[i].Answer = cut(c.History[i].Answer, ConversationAnswer)
		if len(c.History[i].Citations) > ConversationCitations {
			c.History[i].Citations = nil
		}
	}
	return c
}

// Store reads and appends sessions in AGENTBUS_SESSIONS. It opens the
// bucket on first use, so that a process started before the bucket was
// provisioned still works once it is. Safe for concurrent use.
type Store struct {
	cfg Config
	log *slog.Logger
	kv  func(ctx context.Context) (*bus.KV, error)
}

// New checks cfg and makes a Store.
func New(cfg Config) (*Store, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger.With("component", "sessions")}
	var mu sync.Mutex
	var kv *bus.KV
	s.kv = func(ctx context.Context) (*bus.KV, error) {
		mu.Lock()
		defer mu.Unlock()
		if kv != nil {
			return kv, nil
		}
		k, err := cfg.Bus.KV(ctx, subjects.BucketSessions)
		if err != nil {
			return nil, fmt.Errorf("sessions: %w (provisioned by serve, orchestrator, gateway and worker at start)", err)
		}
		kv = k
		return k, nil
	}
	return s, nil
}

// History is how many turns a Conversation from this store carries.
func (s *Store) History() int { return s.cfg.History }

// Load returns a tenant's (and, if user is set, that user's) session, or
// an error wrapping ErrNotFound. A bad id is a *subjects.TokenError.
func (s *Store) Load(ctx context.Context, tenant, user, id string) (Session, error) {
	key, err := subjects.SessionKey(tenant, user, id)
	if err != nil {
		return Session{}, err
	}
	kv, err := s.kv(ctx)
	if err != nil {
		return Session{}, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		return Session{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return Session{}, fmt.Errorf("sessions: load %s: %w", id, err)
	}
	var out Session
	if err := json.Unmarshal(e.Value, &out); err != nil {
		return Session{}, fmt.Errorf("sessions: session %s is corrupt: %w", id, err)
	}
	return out, nil
}

// Brief is one line of a list of sessions.
type Brief struct {
	SessionID string    `json:"session_id"`
	TurnCount int       `json:"turn_count"`
	LastQuery string    `json:"last_query,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MaxList bounds List.
const MaxList = 100

// List returns a tenant's (or, if user is set, that user's) sessions,
// newest first, at most MaxList of them. It reads every session of the
// scope: meant for people, not for a hot path.
func (s *Store) List(ctx context.Context, tenant, user string) ([]Brief, error) {
	key, err := subjects.SessionKey(tenant, user, "x")
	if err != nil {
		return nil, err
	}
	kv, err := s.kv(ctx)
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(key, "x")
	entries, err := kv.ListMatching(ctx, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("sessions: list: %w", err)
	}
	out := make([]Brief, 0, len(entries))
	for _, e := range entries {
		var sess Session
		if !strings.HasPrefix(e.Key, prefix) || json.Unmarshal(e.Value, &sess) != nil {
			continue
		}
		b := Brief{SessionID: strings.TrimPrefix(e.Key, prefix), TurnCount: sess.Count(), UpdatedAt: sess.UpdatedAt}
		if n := len(sess.Turns); n > 0 {
			b.LastQuery = sess.Turns[n-1].Query
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Brief) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(a.SessionID, b.SessionID))
	})
	return out[:min(len(out), MaxList)], nil
}

// maxConflicts bounds the compare-and-set retries of one Append.
const maxConflicts = 64

// Append records a finished turn in a session (created if new), and
// brings the rolling summary up to date every SummaryEvery turns: by
// Extractive at once, and, when another Summarizer is configured, marks
// the session's SummaryPending for Refine to write that one. It is
// idempotent by workflow id: a turn whose workflow the session already
// has replaces that turn's content in place (a workflow resumed after a
// failure and then completed) or, if equal, changes nothing — a
// completion redone after a crash never adds a second turn. t.N is set by
// Append. It returns the session as stored.
func (s *Store) Append(ctx context.Context, tenant, user, id string, t events.Turn) (Session, error) {
	key, err := subjects.SessionKey(tenant, user, id)
	if err != nil {
		return Session{}, err
	}
	if err := subjects.ValidWorkflow(t.WorkflowID); err != nil {
		return Session{}, fmt.Errorf("sessions: turn: %w", err)
	}
	kv, err := s.kv(ctx)
	if err != nil {
		return Session{}, err
	}
	t = s.trim(t)
	for attempt := range maxConflicts {
		if attempt > 0 {
			// Another turn of the session won the revision: back off a
			// little, with jitter, before reading it again.
			select {
			case <-ctx.Done():
				return Session{}, ctx.Err()
			case <-time.After(time.Duration(rand.Int64N(int64(min(attempt, 20)) * int64(time.Millisecond)))):
			}
		}
		var sess Session
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, bus.ErrNotFound):
			now := s.cfg.Now().UTC()
			sess = Session{TenantID: tenant, User: user, SessionID: id, CreatedAt: now}
		case err != nil:
			return Session{}, fmt.Errorf("sessions: append to %s: %w", id, err)
		default:
			if err := json.Unmarshal(e.Value, &sess); err != nil {
				return Session{}, fmt.Errorf("sessions: session %s is corrupt: %w", id, err)
			}
			rev = e.Revision
		}
		changed, added := sess.merge(t)
		if !changed {
			return sess, nil
		}
		if added && sess.Count()%s.cfg.SummaryEvery == 0 {
			s.summarizeNow(ctx, &sess)
		}
		if over := len(sess.Turns) - s.cfg.MaxTurns; over > 0 {
			sess.Turns = sess.Turns[over:]
			sess.Dropped += over
		}
		sess.UpdatedAt = s.cfg.Now().UTC()
		data, err := json.Marshal(sess)
		if err != nil {
			return Session{}, err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, data)
		} else {
			_, err = kv.Update(ctx, key, data, rev)
		}
		if errors.Is(err, bus.ErrConflict) {
			continue // another turn of the session was appended meanwhile
		}
		if err != nil {
			return Session{}, fmt.Errorf("sessions: append to %s: %w", id, err)
		}
		return sess, nil
	}
	return Session{}, fmt.Errorf("sessions: append to %s: %w after %d attempts", id, bus.ErrConflict, maxConflicts)
}

// merge puts t in the session: in place of the turn of the same workflow,
// or after the last. It reports whether the session changed and whether
// the turn is a new one.
func (s *Session) merge(t events.Turn) (changed, added bool) {
	for i, old := range s.Turns {
		if old.WorkflowID != t.WorkflowID {
			continue
		}
		t.N, t.At = old.N, old.At
		a, _ := json.Marshal(old)
		b, _ := json.Marshal(t)
		if string(a) == string(b) {
			return false, false
		}
		s.Turns[i] = t
		return true, false
	}
	t.N = s.Count() + 1
	s.Turns = append(s.Turns, t)
	return true, true
}

// trim cuts a turn's answer and drops oversized citations.
func (s *Store) trim(t events.Turn) events.Turn {
	t.Answer = cut(t.Answer, s.cfg.MaxAnswer)
	if len(t.Citations) > s.cfg.MaxCitations || !json.Valid(t.Citations) {
		t.Citations = nil
	}
	if t.ResolvedQuery == t.Query {
		t.ResolvedQuery = ""
	}
	if t.At.IsZero() {
		t.At = s.cfg.Now().UTC()
	}
	return t
}

// summarizeNow brings the summary up to date with every turn, by
// Extractive from the previous summary and the turns after it; with
// another Summarizer configured it leaves that one's summary pending.
func (s *Store) summarizeNow(ctx context.Context, sess *Session) {
	base, from := sess.Summary, sess.SummaryCovers+1
	ex, extractive := s.cfg.Summarizer.(Extractive)
	text, by, _ := ex.Summarize(ctx, base, sess.turns(from, sess.Count()))
	sess.Summary, sess.SummaryCovers, sess.SummaryBy, sess.SummaryPending = text, sess.Count(), by, nil
	if !extractive {
		sess.SummaryPending = &Refinement{Base: base, From: from, Covers: sess.Count()}
	}
}

// turns returns the kept turns numbered from to covers.
func (s Session) turns(from, covers int) []events.Turn {
	lo := min(max(0, from-1-s.Dropped), len(s.Turns))
	hi := min(max(lo, covers-s.Dropped), len(s.Turns))
	return s.Turns[lo:hi]
}

// Refine writes the summary a session's SummaryPending owes, by the
// configured Summarizer, in place of the extractive one — unless a newer
// summary has come due meanwhile (its own Refine writes that one). If the
// Summarizer fails, the extractive summary stays. Nothing pending: it does
// nothing. It reports whether it replaced the summary.
func (s *Store) Refine(ctx context.Context, tenant, user, id string) (bool, error) {
	key, err := subjects.SessionKey(tenant, user, id)
	if err != nil {
		return false, err
	}
	kv, err := s.kv(ctx)
	if err != nil {
		return false, err
	}
	sess, _, err := s.get(ctx, kv, key)
	if errors.Is(err, bus.ErrNotFound) || err == nil && sess.SummaryPending == nil {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	owed := *sess.SummaryPending
	sctx, cancel := context.WithTimeout(ctx, s.cfg.SummaryTimeout)
	text, by, err := s.cfg.Summarizer.Summarize(sctx, owed.Base, sess.turns(owed.From, owed.Covers))
	cancel()
	if err != nil || text == "" {
		s.log.Warn("summary: keeping the extractive one", "session", id, "summarizer", by, "err", err)
		text = ""
	}
	for range maxConflicts {
		sess, rev, err := s.get(ctx, kv, key)
		if err != nil {
			return false, err
		}
		if sess.SummaryPending == nil || *sess.SummaryPending != owed {
			return false, nil // written by another, or a newer one is due
		}
		sess.SummaryPending = nil
		if text != "" {
			sess.Summary, sess.SummaryBy = text, by
		}
		data, err := json.Marshal(sess)
		if err != nil {
			return false, err
		}
		_, err = kv.Update(ctx, key, data, rev)
		if errors.Is(err, bus.ErrConflict) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("sessions: summary of %s: %w", id, err)
		}
		return text != "", nil
	}
	return false, fmt.Errorf("sessions: summary of %s: %w after %d attempts", id, bus.ErrConflict, maxConflicts)
}

// get reads a stored session and its revision.
func (s *Store) get(ctx context.Context, kv *bus.KV, key string) (Session, uint64, error) {
	e, err := kv.Get(ctx, key)
	if err != nil {
		return Session{}, 0, fmt.Errorf("sessions: %s: %w", key, err)
	}
	var sess Session
	if err := json.Unmarshal(e.Value, &sess); err != nil {
		return Session{}, 0, fmt.Errorf("sessions: session %s is corrupt: %w", key, err)
	}
	return sess, e.Revision, nil
}

// cut shortens s to at most n bytes at a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "…"
}
