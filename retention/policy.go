package retention

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
)

// Defaults of Policy.
const (
	// DefaultCompleted is how long a completed workflow is kept after it
	// ended: as long as AGENTBUS_EVENTS keeps its events by default.
	DefaultCompleted = 7 * 24 * time.Hour
	// DefaultFailed is how long a failed, canceled or rejected workflow
	// is kept after it ended: longer, for its post-mortem.
	DefaultFailed = 30 * 24 * time.Hour
)

// Forever is a period that never ends: a workflow kept forever is never
// purged by the sweep (DELETE still purges it).
const Forever time.Duration = -1

// MinPeriod is the shortest period a Policy accepts.
const MinPeriod = time.Minute

// Policy says how long ended workflows are kept, by how they ended and by
// tenant. The zero value means the defaults. It is a value, safe to share
// once made.
type Policy struct {
	// Completed is how long a completed workflow is kept after its last
	// write; default DefaultCompleted, Forever: never purged.
	Completed time.Duration
	// Failed is how long a failed, canceled or rejected workflow is kept;
	// default DefaultFailed, Forever: never purged.
	Failed time.Duration
	// Tenants override Completed and Failed per tenant, field by field.
	Tenants map[string]Rule
}

// Rule is one tenant's periods in Policy.Tenants: zero is the policy's
// own, Forever never purged.
type Rule struct {
	Completed time.Duration
	Failed    time.Duration
}

func (p *Policy) setDefaults() {
	if p.Completed == 0 {
		p.Completed = DefaultCompleted
	}
	if p.Failed == 0 {
		p.Failed = DefaultFailed
	}
}

// Validate reports every problem with the policy.
func (p Policy) Validate() error {
	var errs []error
	check := func(what string, d time.Duration) {
		if d != 0 && d != Forever && d < MinPeriod {
			errs = append(errs, fmt.Errorf("retention: %s %s is below %s (or use forever)", what, d, MinPeriod))
		}
	}
	check("completed", p.Completed)
	check("failed", p.Failed)
	for _, t := range slices.Sorted(maps.Keys(p.Tenants)) {
		check("tenant "+t+" completed", p.Tenants[t].Completed)
		check("tenant "+t+" failed", p.Tenants[t].Failed)
	}
	return errors.Join(errs...)
}

// For returns how long a workflow of tenant that ended in status is kept,
// and false if it is not purged at all: it has not ended, or its period
// is Forever.
func (p Policy) For(tenant string, status events.State) (time.Duration, bool) {
	p.setDefaults()
	var d time.Duration
	r := p.Tenants[tenant]
	switch status {
	case events.StateCompleted:
		d = cmpOr(r.Completed, p.Completed)
	case events.StateFailed, events.StateCanceled, events.StateRejected:
		d = cmpOr(r.Failed, p.Failed)
	default:
		return 0, false
	}
	return d, d > 0
}

func cmpOr(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

// periods lists the distinct periods that purge something, shortest first.
func (p Policy) periods() []time.Duration {
	p.setDefaults()
	set := map[time.Duration]bool{p.Completed: true, p.Failed: true}
	for _, r := range p.Tenants {
		set[cmpOr(r.Completed, p.Completed)] = true
		set[cmpOr(r.Failed, p.Failed)] = true
	}
	var out []time.Duration
	for d := range set {
		if d > 0 {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// fingerprint names the policy: a sweep's cursors are good only for the
// policy they were made with (a tenant moved to a shorter period must be
// looked at again from the start).
func (p Policy) fingerprint() string {
	p.setDefaults()
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d", p.Completed, p.Failed)
	for _, t := range slices.Sorted(maps.Keys(p.Tenants)) {
		fmt.Fprintf(&b, ";%s=%d/%d", t, p.Tenants[t].Completed, p.Tenants[t].Failed)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// ParsePeriod reads a period: a Go duration ("36h", "90m"), whole days
// ("7d"), or "forever" (Forever; "0" says the same).
func ParsePeriod(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "forever" || s == "0":
		return Forever, nil
	case strings.HasSuffix(s, "d"):
		n, err := strconv.Atoi(strings.TrimSuffix(s, "d"))
		if err != nil || n < 1 {
			return 0, fmt.Errorf("retention: period %q: want whole days (\"7d\"), a duration (\"36h\") or forever", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("retention: period %q: want whole days (\"7d\"), a duration (\"36h\") or forever", s)
	}
	if d < MinPeriod {
		return 0, fmt.Errorf("retention: period %q is below %s", s, MinPeriod)
	}
	return d, nil
}

// FormatPeriod writes a period as ParsePeriod reads it: "forever", whole
// days as "7d", anything else as a Go duration.
func FormatPeriod(d time.Duration) string {
	switch {
	case d < 0:
		return "forever"
	case d > 0 && d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	return d.String()
}

// ParseTable decodes a retention table (--retention FILE or
// AGENTBUS_RETENTION): a JSON object from tenant id to {"completed",
// "failed"}, each optional (absent: the default), a period as ParsePeriod
// reads it. It is validated against the schema schemas.Retention; an
// invalid table is a *schemas.ValidationError naming the JSON pointer of
// every problem, a bad period an error naming its tenant and field.
func ParseTable(data []byte) (map[string]Rule, error) {
	if err := schemas.Validate(schemas.Retention, data); err != nil {
		return nil, fmt.Errorf("retention: table: %w", err)
	}
	var raw map[string]struct {
		Completed string `json:"completed"`
		Failed    string `json:"failed"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("retention: table: %w", err)
	}
	out := make(map[string]Rule, len(raw))
	var errs []error
	for _, t := range slices.Sorted(maps.Keys(raw)) {
		var r Rule
		for _, f := range []struct {
			name, value string
			to          *time.Duration
		}{{"completed", raw[t].Completed, &r.Completed}, {"failed", raw[t].Failed, &r.Failed}} {
			if f.value == "" {
				continue
			}
			d, err := ParsePeriod(f.value)
			if err != nil {
				errs = append(errs, fmt.Errorf("/%s/%s: %w", t, f.name, err))
			}
			*f.to = d
		}
		out[t] = r
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("retention: table: %w", errors.Join(errs...))
	}
	return out, nil
}
