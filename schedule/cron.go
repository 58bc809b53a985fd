package schedule

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// ErrCron is wrapped by every error of ParseCron.
var ErrCron = errors.New("schedule: invalid cron expression")

// Cron is a parsed cron expression: which seconds, minutes, hours, days of
// the month, months and days of the week match. Its grammar is
// nats-server's (robfig/cron's): numbers, names (jan, mon), ranges, steps,
// lists, * and ?. A five-field expression (minute first) runs at second 0.
// The zero value matches nothing; a Cron is immutable.
type Cron struct {
	second, minute, hour, dom, month, dow uint64
	// Pattern is the six-field expression the server is given.
	Pattern string
}

// starBit marks a field written as * (or ?): day of month and day of week
// then combine with AND, else with OR, as in every cron.
const starBit = 1 << 63

type bounds struct {
	min, max uint
	names    map[string]uint
}

var (
	seconds = bounds{0, 59, nil}
	minutes = bounds{0, 59, nil}
	hours   = bounds{0, 23, nil}
	doms    = bounds{1, 31, nil}
	months  = bounds{1, 12, map[string]uint{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}}
	dows = bounds{0, 6, map[string]uint{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}}
)

var predefined = map[string]string{
	"@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
	"@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *", "@hourly": "0 0 * * * *",
}

// ParseCron parses a cron expression of five or six fields, or a
// predefined one (@hourly, @daily, @weekly, @monthly, @yearly).
func ParseCron(expr string) (Cron, error) {
	expr = strings.TrimSpace(expr)
	if p, ok := predefined[expr]; ok {
		expr = p
	}
	fields := strings.Fields(expr)
	switch len(fields) {
	case 5:
		fields = append([]string{"0"}, fields...)
	case 6:
	default:
		return Cron{}, fmt.Errorf("%w: %q has %d fields, want 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)", ErrCron, expr, len(fields))
	}
	var c Cron
	names := []string{"second", "minute", "hour", "day of month", "month", "day of week"}
	for i, dst := range []*uint64{&c.second, &c.minute, &c.hour, &c.dom, &c.month, &c.dow} {
		b := []bounds{seconds, minutes, hours, doms, months, dows}[i]
		v, err := field(fields[i], b)
		if err != nil {
			return Cron{}, fmt.Errorf("%w: %s field %q: %v", ErrCron, names[i], fields[i], err)
		}
		*dst = v
	}
	c.Pattern = strings.Join(fields, " ")
	if _, ok := c.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC); !ok {
		return Cron{}, fmt.Errorf("%w: %q never matches a date", ErrCron, expr)
	}
	return c, nil
}

func field(s string, b bounds) (uint64, error) {
	var out uint64
	for _, expr := range strings.Split(s, ",") {
		v, err := rangeBits(expr, b)
		if err != nil {
			return 0, err
		}
		out |= v
	}
	return out, nil
}

func rangeBits(expr string, b bounds) (uint64, error) {
	rs := strings.Split(expr, "/")
	lh := strings.Split(rs[0], "-")
	var start, end, step uint = 0, 0, 1
	var extra uint64
	var err error
	switch {
	case lh[0] == "*" || lh[0] == "?":
		if len(lh) > 1 {
			return 0, fmt.Errorf("%q: * takes no range", expr)
		}
		start, end, extra = b.min, b.max, starBit
	default:
		if start, err = number(lh[0], b); err != nil {
			return 0, err
		}
		end = start
		switch len(lh) {
		case 1:
		case 2:
			if end, err = number(lh[1], b); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("%q: too many hyphens", expr)
		}
	}
	switch len(rs) {
	case 1:
	case 2:
		if step, err = number(rs[1], bounds{}); err != nil {
			return 0, err
		}
		if step == 0 {
			return 0, fmt.Errorf("%q: a step must be positive", expr)
		}
		if len(lh) == 1 && extra == 0 {
			end = b.max // "N/step" is "N-max/step"
		}
		if step > 1 {
			extra = 0
		}
	default:
		return 0, fmt.Errorf("%q: too many slashes", expr)
	}
	if start < b.min || end > b.max || start > end {
		return 0, fmt.Errorf("%q: outside %d-%d", expr, b.min, b.max)
	}
	var v uint64
	for i := start; i <= end; i += step {
		v |= 1 << i
	}
	return v | extra, nil
}

func number(s string, b bounds) (uint, error) {
	if n, ok := b.names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return uint(n), nil
}

func (c Cron) dayMatches(t time.Time) bool {
	d := c.dom&(1<<uint(t.Day())) != 0
	w := c.dow&(1<<uint(t.Weekday())) != 0
	if c.dom&starBit != 0 || c.dow&starBit != 0 {
		return d && w
	}
	return d || w
}

// Matches reports whether t (read in loc) is one of c's slots.
func (c Cron) Matches(t time.Time, loc *time.Location) bool {
	t = t.In(loc)
	return t.Nanosecond() == 0 && c.month&(1<<uint(t.Month())) != 0 && c.dayMatches(t) &&
		c.hour&(1<<uint(t.Hour())) != 0 && c.minute&(1<<uint(t.Minute())) != 0 && c.second&(1<<uint(t.Second())) != 0
}

// horizon bounds how far Next and Prev look: as the server, 5 years.
const horizon = 5 * 366 * 24 * time.Hour

// Next returns c's first slot strictly after t, read in loc; false when
// there is none within five years.
func (c Cron) Next(t time.Time, loc *time.Location) (time.Time, bool) {
	t = t.In(loc).Truncate(time.Second).Add(time.Second)
	limit := t.Add(horizon)
	for t.Before(limit) {
		y, mo, d := t.Date()
		h, mi, _ := t.Clock()
		switch {
		case c.month&(1<<uint(mo)) == 0:
			t = time.Date(y, mo+1, 1, 0, 0, 0, 0, loc)
		case !c.dayMatches(t):
			t = time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
		case c.hour&(1<<uint(h)) == 0:
			t = time.Date(y, mo, d, h+1, 0, 0, 0, loc)
		case c.minute&(1<<uint(mi)) == 0:
			t = t.Truncate(time.Minute).Add(time.Minute)
		case c.second&(1<<uint(t.Second())) == 0:
			t = t.Add(time.Duration(nextBit(c.second, uint(t.Second()))) * time.Second)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}

// nextBit is how many seconds from s the next set bit of mask (below 60)
// is, or the rest of the minute when none is.
func nextBit(mask uint64, s uint) uint {
	rest := (mask &^ starBit) >> (s + 1)
	if rest == 0 {
		return 60 - s
	}
	return uint(bits.TrailingZeros64(rest)) + 1
}

// Prev returns c's last slot strictly before t, read in loc; false when
// there is none within five years.
func (c Cron) Prev(t time.Time, loc *time.Location) (time.Time, bool) {
	t = t.In(loc)
	if t.Truncate(time.Second).Equal(t) {
		t = t.Add(-time.Second)
	} else {
		t = t.Truncate(time.Second)
	}
	limit := t.Add(-horizon)
	for t.After(limit) {
		y, mo, d := t.Date()
		h, mi, _ := t.Clock()
		switch {
		case c.month&(1<<uint(mo)) == 0:
			t = time.Date(y, mo, 1, 0, 0, 0, 0, loc).Add(-time.Second)
		case !c.dayMatches(t):
			t = time.Date(y, mo, d, 0, 0, 0, 0, loc).Add(-time.Second)
		case c.hour&(1<<uint(h)) == 0:
			t = time.Date(y, mo, d, h, 0, 0, 0, loc).Add(-time.Second)
		case c.minute&(1<<uint(mi)) == 0:
			t = t.Truncate(time.Minute).Add(-time.Second)
		case c.second&(1<<uint(t.Second())) == 0:
			t = t.Add(-time.Second)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}
