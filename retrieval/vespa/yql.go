package vespa

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbus/agentbus/retrieval"
)

// minDate is the earliest date a filter bound can express (year 1). Vespa
// stores a missing long attribute as its undefined value, the smallest
// long, which lies below minDate; bounding dates below by minDate keeps
// chunks without a date out of every date-filtered search, as
// retrieval.Filters.Match does.
var minDate = time.Time{}.Unix()

// buildYQL is the YQL of one search. Only fixed text, the document type
// (an identifier DocType made), integers and escaped string literals go
// into it: the user's query text is sent in the "query" parameter that
// userQuery() reads, never spliced in.
func buildYQL(doctype, profile string, k int, f retrieval.Filters) (string, error) {
	var match string
	switch profile {
	case retrieval.ProfileBM25:
		match = "userQuery()"
	case retrieval.ProfileVector:
		match = fmt.Sprintf("({targetHits:%d}nearestNeighbor(embedding, q))", k)
	case "":
		match = "true"
	default:
		return "", fmt.Errorf("%w: %q", retrieval.ErrUnknownProfile, profile)
	}
	clauses := []string{match}
	filters, err := filterClauses(f)
	if err != nil {
		return "", err
	}
	clauses = append(clauses, filters...)
	return "select * from " + doctype + " where " + strings.Join(clauses, " and "), nil
}

// filterClauses turns filters into YQL and-clauses, in a fixed order
// (dates, then metadata keys sorted). Dates compare epoch seconds, each
// bound rounded down like the stored dates, so no chunk inside the bounds
// is missed.
func filterClauses(f retrieval.Filters) ([]string, error) {
	var out []string
	if !f.From.IsZero() || !f.To.IsZero() {
		lo := minDate
		if !f.From.IsZero() {
			lo = max(f.From.Unix(), minDate)
		}
		out = append(out, "date >= "+strconv.FormatInt(lo, 10))
		if !f.To.IsZero() {
			out = append(out, "date <= "+strconv.FormatInt(f.To.Unix(), 10))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
		if k == "" {
			return nil, fmt.Errorf("%w: empty metadata key", ErrInvalidFilter)
		}
		key, err := yqlString(k)
		if err != nil {
			return nil, fmt.Errorf("%w: metadata key %q: %w", ErrInvalidFilter, k, err)
		}
		val, err := yqlString(f.Metadata[k])
		if err != nil {
			return nil, fmt.Errorf("%w: metadata %q value %q: %w", ErrInvalidFilter, k, f.Metadata[k], err)
		}
		out = append(out, "metadata contains sameElement(key contains "+key+", value contains "+val+")")
	}
	return out, nil
}

// yqlString is s as a double-quoted YQL string literal: '\' and '"' are
// backslash-escaped; control characters and invalid UTF-8, which have no
// business in a filter, are refused rather than escaped.
func yqlString(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("invalid UTF-8")
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			return "", fmt.Errorf("control character %U", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}
