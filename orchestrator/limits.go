package orchestrator

import (
	"fmt"
	"math"
	"time"
)

// Limit bounds one tenant's use of one capability (flow control): at most
// MaxInFlight of its steps waiting for or held by a worker at once, and at
// most PerSecond admitted a second (a token bucket holding a tenth of a
// second's worth, at least one). Zero means no bound. A step over a limit waits in its queue,
// with a progress event saying until about when; it is never failed for it.
type Limit struct {
	MaxInFlight int
	PerSecond   float64
}

// LimitKey is the key of Config.Limits for a tenant's limit on a
// capability: "<tenant>/<capability>", or "<tenant>/*" for every
// capability of the tenant that has none of its own.
func LimitKey(tenant, capability string) string { return tenant + "/" + capability }

// limit returns a tenant's limit on a capability.
func (o *Orchestrator) limit(tenant, capability string) (Limit, bool) {
	if l, ok := o.cfg.Limits[LimitKey(tenant, capability)]; ok {
		return l, true
	}
	l, ok := o.cfg.Limits[LimitKey(tenant, "*")]
	return l, ok
}

// limited reports whether any limit applies to a tenant's steps of a
// capability: they then always wait for admission, busy or not.
func (o *Orchestrator) limited(tenant, capability string) bool {
	l, ok := o.limit(tenant, capability)
	return ok && (l.MaxInFlight > 0 || l.PerSecond > 0) || o.tokens.limited(tenant, capability)
}

// bucket is a token bucket: rate tokens a second, up to a tenth of a
// second's worth (at least one), so that a burst after a quiet spell is
// short.
type bucket struct {
	tokens float64
	at     time.Time
}

// take takes a token if one is there, else says when the next will be.
func (b *bucket) take(rate float64, now time.Time) (bool, time.Time) {
	capacity := math.Max(rate/10, 1)
	if b.at.IsZero() {
		b.tokens = capacity
	} else {
		b.tokens = math.Min(capacity, b.tokens+now.Sub(b.at).Seconds()*rate)
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, now
	}
	return false, now.Add(time.Duration((1 - b.tokens) / rate * float64(time.Second)))
}

// check says whether a tenant may have one more step of a capability
// admitted now, given how many it has in flight; if not, why and until
// about when. The rate limit's token is taken last, so that a step held
// back by another limit does not spend it.
func (f *admission) check(tenant, capability string, inFlight uint64, now time.Time) (ok bool, why string, until time.Time) {
	l, limited := f.o.limit(tenant, capability)
	if limited && l.MaxInFlight > 0 && inFlight >= uint64(l.MaxInFlight) {
		return false, fmt.Sprintf("tenant %s has %d steps of %s in flight, its limit", tenant, inFlight, capability), now.Add(time.Second)
	}
	if ok, why, until := f.o.tokens.check(tenant, capability, now); !ok {
		return false, why, until
	}
	if limited && l.PerSecond > 0 {
		f.mu.Lock()
		b := f.buckets[tenant+"/"+capability]
		if b == nil {
			b = &bucket{}
			f.buckets[tenant+"/"+capability] = b
		}
		ok, next := b.take(l.PerSecond, now)
		f.mu.Unlock()
		if !ok {
			return false, fmt.Sprintf("tenant %s's rate limit on %s is %g steps a second", tenant, capability, l.PerSecond), next
		}
	}
	return true, "", now
}
