package entities

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Grains of a TimeRange: the calendar unit the expression names.
const (
	GrainDay     = "day"
	GrainWeek    = "week"
	GrainMonth   = "month"
	GrainQuarter = "quarter"
	GrainYear    = "year"
)

// span is a matched expression's byte offsets in the query.
type span struct{ start, end int }

func (s span) overlaps(o span) bool { return s.start < o.end && o.start < s.end }

// dated is one resolved temporal expression.
type dated struct {
	span
	r TimeRange
}

const monthRE = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)`

var months = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
	"september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
	"december": 12, "dec": 12,
}

var numberWords = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
	"seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12,
}

// resolver turns the submatches of one pattern into a range relative to
// now; ok is false when the match is not a real date (e.g. 2024-02-30).
type resolver func(now time.Time, m []string) (from, to time.Time, grain string, ok bool)

// temporalRule is one pattern; rules are tried in order and an earlier,
// longer expression claims its bytes first.
type temporalRule struct {
	re      *regexp.Regexp
	resolve resolver
	// claim: a match that does not resolve still keeps its bytes from
	// the other rules ("2023-02-30" is not a year and two numbers).
	claim bool
}

var temporalRules = []temporalRule{
	{rx(`between\s+` + monthRE + `(?:\s+(\d{4}))?\s+and\s+` + monthRE + `(?:\s+(\d{4}))?`), resolveBetween, false},
	{rx(`since\s+` + monthRE + `\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})`), sinceOf(resolveMonthDayYear), false},
	{rx(`since\s+(\d{4})-(\d{2})-(\d{2})`), sinceOf(resolveISO), false},
	{rx(`since\s+` + monthRE + `(?:\s+(\d{4}))?`), sinceOf(resolveMonthMaybeYear), false},
	{rx(`since\s+((?:19|20)\d{2})`), sinceOf(resolveYear), false},
	{rx(`(?:past|last|previous)\s+(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve)\s+(day|week|month|year)s?`), resolveRolling, false},
	{rx(`(this|current|last|previous|next)\s+(week|month|quarter|year)`), resolveCalendar, false},
	{rx(`past\s+(day|week|month|year)`), func(now time.Time, m []string) (time.Time, time.Time, string, bool) {
		return resolveRolling(now, []string{m[0], "1", m[1]})
	}, false},
	{rx(`(yesterday|today|tonight|tomorrow)`), resolveDayWord, false},
	{rx(`q([1-4])\s+((?:19|20)\d{2})`), resolveQuarter, false},
	{rx(`((?:19|20)\d{2})\s+q([1-4])`), func(now time.Time, m []string) (time.Time, time.Time, string, bool) {
		return resolveQuarter(now, []string{m[0], m[2], m[1]})
	}, false},
	{rx(`(\d{4})-(\d{2})-(\d{2})`), resolveISO, true},
	{rx(monthRE + `\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})`), resolveMonthDayYear, false},
	{rx(`(\d{1,2})(?:st|nd|rd|th)?\s+` + monthRE + `,?\s+(\d{4})`), func(now time.Time, m []string) (time.Time, time.Time, string, bool) {
		return resolveMonthDayYear(now, []string{m[0], m[2], m[1], m[3]})
	}, false},
	{rx(`(?:in\s+|during\s+)?` + monthRE + `\s+((?:19|20)\d{2})`), resolveMonthMaybeYear, false},
	{rx(`(?:in|during)\s+` + monthRE), resolveMonthMaybeYear, false},
	{rx(`(?:in\s+|during\s+)?((?:19|20)\d{2})`), resolveYear, false},
}

// rx compiles a case-insensitive, word-bounded pattern.
func rx(p string) *regexp.Regexp { return regexp.MustCompile(`(?i)\b` + p + `\b`) }

// findTimeRanges finds and resolves every temporal expression in query,
// in order of appearance; an expression never overlaps another. Invalid
// lists the spans of date-like text that is no date.
func findTimeRanges(query string, now time.Time) (out []dated, invalid []span) {
	for _, rule := range temporalRules {
		for _, idx := range rule.re.FindAllStringSubmatchIndex(query, -1) {
			s := span{idx[0], idx[1]}
			if overlapsAny(s, out) || overlapsSpan(s, invalid) {
				continue
			}
			m := make([]string, len(idx)/2)
			for i := range m {
				if idx[2*i] >= 0 {
					m[i] = strings.ToLower(query[idx[2*i]:idx[2*i+1]])
				}
			}
			from, to, grain, ok := rule.resolve(now, m)
			if !ok || to.Before(from) {
				if rule.claim {
					invalid = append(invalid, s)
				}
				continue
			}
			out = append(out, dated{span: s, r: TimeRange{Text: query[s.start:s.end], From: from, To: to, Grain: grain}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, invalid
}

func overlapsSpan(s span, ss []span) bool {
	for _, o := range ss {
		if s.overlaps(o) {
			return true
		}
	}
	return false
}

func overlapsAny(s span, ds []dated) bool {
	for _, d := range ds {
		if s.overlaps(d.span) {
			return true
		}
	}
	return false
}

func startOfDay(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}

// endOfDay is the last whole second of t's day: ranges are inclusive.
func endOfDay(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 23, 59, 59, 0, t.Location())
}

func monthRange(y int, m time.Month, loc *time.Location) (time.Time, time.Time) {
	from := time.Date(y, m, 1, 0, 0, 0, 0, loc)
	return from, endOfDay(from.AddDate(0, 1, -1))
}

// recentYear is the year of the latest month m that has begun by now.
func recentYear(now time.Time, m time.Month) int {
	if m > now.Month() {
		return now.Year() - 1
	}
	return now.Year()
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func validDay(y int, m time.Month, d int) (time.Time, bool) {
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return time.Time{}, false
	}
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return t, t.Day() == d && t.Month() == m
}

func resolveBetween(now time.Time, m []string) (time.Time, time.Time, string, bool) {
	m1, m2 := months[m[1]], months[m[3]]
	y1, y2 := atoi(m[2]), atoi(m[4])
	switch {
	case y1 == 0 && y2 == 0:
		// The latest such period that has begun.
		y1 = recentYear(now, m1)
		y2 = y1
		if m2 < m1 {
			y2++
		}
	case y2 == 0:
		y2 = y1
		if m2 < m1 {
			y2++
		}
	case y1 == 0:
		y1 = y2
		if m1 > m2 {
			y1--
		}
	}
	from, _ := monthRange(y1, m1, now.Location())
	_, to := monthRange(y2, m2, now.Location())
	return from, to, GrainMonth, true
}

// sinceOf turns a resolver of a point in time into "from it until the end
// of today".
func sinceOf(r resolver) resolver {
	return func(now time.Time, m []string) (time.Time, time.Time, string, bool) {
		from, _, grain, ok := r(now, m)
		return from, endOfDay(now), grain, ok
	}
}

func resolveMonthMaybeYear(now time.Time, m []string) (time.Time, time.Time, string, bool) {
	mon := months[m[1]]
	y := recentYear(now, mon)
	if len(m) > 2 && m[2] != "" {
		y = atoi(m[2])
	}
	from, to := monthRange(y, mon, now.Location())
	return from, to, GrainMonth, true
}

func resolveYear(now time.Time, m []string) (time.Time, time.Time, string, bool) {
	y := atoi(m[1])
	return time.Date(y, 1, 1, 0, 0, 0, 0, now.Location()), time.Date(y, 12, 31, 23, 59, 59, 0, now.Location()), GrainYear, true
}

func resolveISO(now time.Time, m []string) (time.Time, time.Time, string, bool) {
	d, ok := validDay(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]))
	return dayOf(now, d, ok)
}

func resolveMonthDayYear(now time.Time, m []string) (time.Time, time.Time, string, bool) {
	d, ok := validDay(atoi(m[3]), months[m[1]], atoi(m[2]))
	return dayOf(now, d, ok)
}

func dayOf(now, d time.Time, ok bool) (time.Time, time.Time, string, bool) {
	from := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, now.Location())
	return from, endOfDay(from), GrainDay, ok
}

func resolveQuarter(now time.Time, m []string) (time.Time, time.Time, string, bool) {
	q, y := atoi(m[1]), atoi(m[2])
	from := time.Date(y, time.Month(3*(q-1)+1), 1, 0, 0, 0, 0, now.Location())
	return from, endOfDay(from.AddDate(0, 3, -1)), GrainQuarter, true
}

func resolveDayWord(now time.Time, m []string) (time.Time, time.Time, string, bool) {
	d := now
	switch m[1] {
	case "yesterday":
		d = now.AddDate(0, 0, -1)
	case "tomorrow":
		d = now.AddDate(0, 0, 1)
	}
	return startOfDay(d), endOfDay(d), GrainDay, true
}

// resolveRolling is "past N units": today and the days back to (not
// including) the same date N units ago, so "past 3 days" is today and the
// two days before.
func resolveRolling(now time.Time, m []string) (time.Time, time.Time, string, bool) {
	n, ok := numberWords[m[1]]
	if !ok {
		n = atoi(m[1])
	}
	if n <= 0 {
		return time.Time{}, time.Time{}, "", false
	}
	var from time.Time
	switch m[2] {
	case "day":
		from = now.AddDate(0, 0, -n)
	case "week":
		from = now.AddDate(0, 0, -7*n)
	case "month":
		from = now.AddDate(0, -n, 0)
	default:
		from = now.AddDate(-n, 0, 0)
	}
	return startOfDay(from).AddDate(0, 0, 1), endOfDay(now), m[2], true
}

// resolveCalendar is "this/last/next week|month|quarter|year": the whole
// calendar period (weeks start on Monday).
func resolveCalendar(now time.Time, m []string) (time.Time, time.Time, string, bool) {
	offset := 0
	switch m[1] {
	case "last", "previous":
		offset = -1
	case "next":
		offset = 1
	}
	loc := now.Location()
	switch m[2] {
	case "week":
		monday := startOfDay(now).AddDate(0, 0, -((int(now.Weekday())+6)%7)+7*offset)
		return monday, endOfDay(monday.AddDate(0, 0, 6)), GrainWeek, true
	case "month":
		first := time.Date(now.Year(), now.Month()+time.Month(offset), 1, 0, 0, 0, 0, loc)
		from, to := monthRange(first.Year(), first.Month(), loc)
		return from, to, GrainMonth, true
	case "quarter":
		q := (int(now.Month()) - 1) / 3
		from := time.Date(now.Year(), time.Month(3*q+1+3*offset), 1, 0, 0, 0, 0, loc)
		return from, endOfDay(from.AddDate(0, 3, -1)), GrainQuarter, true
	default:
		y := now.Year() + offset
		return time.Date(y, 1, 1, 0, 0, 0, 0, loc), time.Date(y, 12, 31, 23, 59, 59, 0, loc), GrainYear, true
	}
}
