package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// Token limits: a model provider's tokens-per-minute limit is shared by
// every tenant, so a tenant may be bounded in what its steps spend on a
// model (Config.TokenLimits). Each limit is a token bucket in
// AGENTBUS_LIMITS that every orchestrator shares: the orchestrator that
// records a reply takes what the step spent (its usage names the model,
// llm.MeterModel) from its tenant's bucket with compare-and-set, and
// notes the step's capability as one that spends on that model. Every
// orchestrator watches the bucket, so all of them know each tenant's
// balance and which capabilities spend on which model. A tenant's steps
// of such a capability then pass the admission (admission.go), which
// admits one while the bucket holds a token and otherwise leaves it
// waiting in its queue, with a progress event saying until about when
// (the time the bucket takes to refill to one token). What a step will
// spend is not known before it runs, so the steps in flight may overdraw
// the bucket; the next ones then wait until the debt is paid back, and
// the rate over time is the limit.

// TokenLimit bounds what one tenant's steps spend on one model: PerMinute
// tokens (prompt and completion) a minute, from a bucket holding at most
// Burst tokens (default PerMinute: a minute's worth, as a provider's
// per-minute limit allows).
type TokenLimit struct {
	PerMinute float64
	Burst     float64
}

// TokenLimitKey is the key of Config.TokenLimits for a tenant's limit on
// a model: "<tenant>/<model>", or "<tenant>/*" for every model of the
// tenant that has none of its own.
func TokenLimitKey(tenant, model string) string { return tenant + "/" + model }

// tokenState is one tenant's bucket for one model, as stored.
type tokenState struct {
	Tenant string `json:"tenant"`
	Model  string `json:"model"`
	// Balance is the tokens in the bucket At (negative: in debt).
	Balance float64   `json:"balance"`
	At      time.Time `json:"at"`
	// Capabilities spend on the model: their steps' replies said so.
	Capabilities []string `json:"capabilities"`
	// PerStep is what a step of each capability spent lately (a moving
	// average): the admission expects as much of a step it admits.
	PerStep map[string]float64 `json:"per_step,omitempty"`
}

// balance is the bucket's tokens at now under limit l.
func (s *tokenState) balance(l TokenLimit, now time.Time) float64 {
	return math.Min(l.burst(), s.Balance+now.Sub(s.At).Seconds()*l.PerMinute/60)
}

func (l TokenLimit) burst() float64 {
	if l.Burst > 0 {
		return l.Burst
	}
	return l.PerMinute
}

// tokenLimits is an orchestrator's view of the token buckets.
type tokenLimits struct {
	o *Orchestrator

	mu    sync.Mutex
	kv    *bus.KV
	state map[string]*tokenState // by tenant/model
	// spends is capability → models its steps spend on.
	spends map[string]map[string]bool
	// per is what a step of a capability spent on a model lately
	// (capability/model → tokens, a moving average), and held what the
	// steps admitted since the bucket was last stored are expected to
	// spend (tenant/model → tokens): the admission counts it against the
	// bucket, so that one round does not admit more than the bucket holds.
	// The next stored bucket is the truth again.
	per, held map[string]float64
	heldAt    map[string]time.Time
}

// heldFor is how long the tokens expected of admitted steps count against
// a bucket without a reply's count replacing them: a step admitted and
// then lost (or taken by another orchestrator's admission) must not hold
// the bucket shut. A full bucket admits one step whatever is held, for
// the same reason when a step's estimate is the whole bucket.
const heldFor = 10 * time.Second

func newTokenLimits(o *Orchestrator) *tokenLimits {
	if len(o.cfg.TokenLimits) == 0 {
		return nil
	}
	return &tokenLimits{o: o, state: map[string]*tokenState{}, spends: map[string]map[string]bool{}, per: map[string]float64{}, held: map[string]float64{}, heldAt: map[string]time.Time{}}
}

// limit returns a tenant's limit on a model.
func (t *tokenLimits) limit(tenant, model string) (TokenLimit, bool) {
	if l, ok := t.o.cfg.TokenLimits[TokenLimitKey(tenant, model)]; ok {
		return l, true
	}
	l, ok := t.o.cfg.TokenLimits[TokenLimitKey(tenant, "*")]
	return l, ok
}

// limited reports whether a tenant's steps of a capability spend on a
// model the tenant is limited on.
func (t *tokenLimits) limited(tenant, capability string) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for m := range t.spends[capability] {
		if _, ok := t.limit(tenant, m); ok {
			return true
		}
	}
	return false
}

// check says whether a tenant may have one more step of a capability
// admitted now: every bucket of a model the capability spends on must
// hold a token. If not, why and until about when.
func (t *tokenLimits) check(tenant, capability string, now time.Time) (bool, string, time.Time) {
	if t == nil {
		return true, "", now
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	models := make([]string, 0, len(t.spends[capability]))
	for m := range t.spends[capability] {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		l, ok := t.limit(tenant, m)
		s := t.state[TokenLimitKey(tenant, m)]
		if !ok || s == nil {
			continue
		}
		k := TokenLimitKey(tenant, m)
		if now.Sub(t.heldAt[k]) > heldFor {
			delete(t.held, k) // an estimate no reply has replaced: forgotten
		}
		full := s.balance(l, now) >= l.burst()
		if b := s.balance(l, now) - t.held[k]; b < 1 && !full {
			wait := time.Duration((1 - b) / (l.PerMinute / 60) * float64(time.Second))
			return false, fmt.Sprintf("tenant %s's token limit on %s is %g tokens a minute (%.0f owed)", tenant, m, l.PerMinute, -b), now.Add(wait)
		}
	}
	for _, m := range models {
		if _, ok := t.limit(tenant, m); ok {
			k := TokenLimitKey(tenant, m)
			t.held[k] += t.per[capability+"/"+m]
			t.heldAt[k] = now
		}
	}
	return true, "", now
}

// spent takes what a stored transition's replies spent from their
// tenant's buckets, in the background: the reply is recorded whatever
// happens to the count, and a count lost to a crash only lets the tenant
// spend that much more.
func (t *tokenLimits) spent(tenant string, eff workflow.Effects) {
	if t == nil || len(eff.Usage.Models) == 0 {
		return
	}
	var caps []string
	for _, tr := range eff.Transitions {
		if tr.StepID != "" && tr.Cause == workflow.CauseReply && tr.Capability != "" && !slices.Contains(caps, tr.Capability) {
			caps = append(caps, tr.Capability)
		}
	}
	usage, ctx := eff.Usage, t.o.backgroundCtx
	t.o.background.Add(1)
	go func() {
		defer t.o.background.Done()
		for m, n := range usage.Models {
			if _, ok := t.limit(tenant, m); !ok {
				continue
			}
			if err := t.take(ctx, tenant, m, float64(n), caps); err != nil && ctx.Err() == nil {
				t.o.log.Warn("token limit: spent tokens not counted", "tenant", tenant, "model", m, "tokens", n, "err", err)
			}
		}
	}()
}

// take takes n tokens from a tenant's bucket for a model with
// compare-and-set, and notes caps as spending on it.
func (t *tokenLimits) take(ctx context.Context, tenant, model string, n float64, caps []string) error {
	kv, err := t.bucket(ctx)
	if err != nil {
		return err
	}
	key, err := subjects.TokenBucketKey(tenant, model)
	if err != nil {
		return err
	}
	l, _ := t.limit(tenant, model)
	var stored tokenState
	err = casUpdate(ctx, kv, key, "token bucket", func(value []byte, found bool) ([]byte, casOp, error) {
		now := time.Now()
		s := tokenState{Tenant: tenant, Model: model, Balance: l.burst(), At: now}
		if found {
			if err := json.Unmarshal(value, &s); err != nil {
				return nil, casSkip, err
			}
		}
		s.Balance, s.At = s.balance(l, now)-n, now
		if s.PerStep == nil {
			s.PerStep = map[string]float64{}
		}
		for _, c := range caps {
			if !slices.Contains(s.Capabilities, c) {
				s.Capabilities = append(s.Capabilities, c)
			}
			if old, ok := s.PerStep[c]; ok {
				s.PerStep[c] = 0.8*old + 0.2*n/float64(len(caps))
			} else {
				s.PerStep[c] = n / float64(len(caps))
			}
		}
		stored = s
		b, err := json.Marshal(s)
		return b, casPut, err
	})
	if err == nil {
		t.learn(&stored)
	}
	return err
}

// learn installs a bucket's state, read or written.
func (t *tokenLimits) learn(s *tokenState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := TokenLimitKey(s.Tenant, s.Model)
	if old := t.state[k]; old != nil && old.At.After(s.At) {
		return
	}
	t.state[k] = s
	delete(t.held, k)
	for c, n := range s.PerStep {
		t.per[c+"/"+s.Model] = n
	}
	for _, c := range s.Capabilities {
		if t.spends[c] == nil {
			t.spends[c] = map[string]bool{}
		}
		t.spends[c][s.Model] = true
	}
}

// bucket opens AGENTBUS_LIMITS once.
func (t *tokenLimits) bucket(ctx context.Context) (*bus.KV, error) {
	t.mu.Lock()
	kv := t.kv
	t.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	kv, err := t.o.bus.Limits(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.kv = kv
	t.mu.Unlock()
	return kv, nil
}

// watch follows the buckets every orchestrator writes until ctx ends,
// watching again when a watch ends on its own.
func (t *tokenLimits) watch(ctx context.Context) {
	if t == nil {
		return
	}
	for ctx.Err() == nil {
		kv, err := t.bucket(ctx)
		var done <-chan struct{}
		if err == nil {
			done, err = kv.WatchDone(ctx, func(e bus.Entry, deleted bool) {
				var s tokenState
				if deleted || json.Unmarshal(e.Value, &s) != nil || s.Tenant == "" || s.Model == "" {
					return
				}
				t.learn(&s)
			})
		}
		if err != nil {
			if ctx.Err() == nil {
				t.o.log.Debug("token limits: watch", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		<-done
	}
}

// release takes back what check counted for n steps of a capability that
// the admission decided on but did not take (another took them first).
func (t *tokenLimits) release(tenant, capability string, n int) {
	if t == nil || n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for m := range t.spends[capability] {
		k := TokenLimitKey(tenant, m)
		if h, ok := t.held[k]; ok {
			t.held[k] = max(h-float64(n)*t.per[capability+"/"+m], 0)
		}
	}
}
