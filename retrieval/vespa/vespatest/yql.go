package vespatest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// plan is a parsed query: what to match and which filters hold.
type plan struct {
	doctype    string
	userQuery  bool
	nn         bool // nearestNeighbor(embedding, q)
	targetHits int
	from, to   *int64
	meta       [][2]string // sameElement(key, value) pairs
}

var (
	selectRE = regexp.MustCompile(`^select \* from ([A-Za-z_][A-Za-z0-9_]*) where (.+)$`)
	nnRE     = regexp.MustCompile(`^\(\{targetHits:(\d+)\}nearestNeighbor\(embedding, q\)\)$`)
	dateRE   = regexp.MustCompile(`^date (>=|<=) (-?\d+)$`)
	sameRE   = regexp.MustCompile(`^metadata contains sameElement\(key contains ("(?:[^"\\]|\\.)*"), value contains ("(?:[^"\\]|\\.)*")\)$`)
)

// parseYQL understands exactly the YQL package vespa emits and refuses the
// rest.
func parseYQL(yql string) (plan, error) {
	m := selectRE.FindStringSubmatch(yql)
	if m == nil {
		return plan{}, fmt.Errorf("could not parse YQL %q: want select * from <doctype> where …", yql)
	}
	p := plan{doctype: m[1]}
	clauses, err := splitAnd(m[2])
	if err != nil {
		return plan{}, err
	}
	for _, c := range clauses {
		switch {
		case c == "true":
		case c == "userQuery()":
			p.userQuery = true
		case nnRE.MatchString(c):
			n, _ := strconv.Atoi(nnRE.FindStringSubmatch(c)[1])
			p.nn, p.targetHits = true, n
		case dateRE.MatchString(c):
			d := dateRE.FindStringSubmatch(c)
			v, err := strconv.ParseInt(d[2], 10, 64)
			if err != nil {
				return plan{}, fmt.Errorf("bad number in %q", c)
			}
			if d[1] == ">=" {
				p.from = &v
			} else {
				p.to = &v
			}
		case sameRE.MatchString(c):
			s := sameRE.FindStringSubmatch(c)
			k, err1 := unquote(s[1])
			v, err2 := unquote(s[2])
			if err1 != nil || err2 != nil {
				return plan{}, fmt.Errorf("bad string literal in %q", c)
			}
			p.meta = append(p.meta, [2]string{k, v})
		default:
			return plan{}, fmt.Errorf("could not parse YQL clause %q", c)
		}
	}
	if p.userQuery && p.nn {
		return plan{}, fmt.Errorf("this fake does not combine userQuery() and nearestNeighbor")
	}
	return p, nil
}

// splitAnd splits on " and " outside string literals and parentheses.
func splitAnd(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ')' in %q", s)
			}
		case depth == 0 && strings.HasPrefix(s[i:], " and "):
			out = append(out, s[start:i])
			i += len(" and ") - 1
			start = i + 1
		}
	}
	if inStr || depth != 0 {
		return nil, fmt.Errorf("unterminated string or '(' in %q", s)
	}
	return append(out, s[start:]), nil
}

// unquote reads a double-quoted YQL string with \" and \\ escapes.
func unquote(lit string) (string, error) {
	body := lit[1 : len(lit)-1]
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(body) || (body[i] != '"' && body[i] != '\\') {
			return "", fmt.Errorf("unknown escape in %s", lit)
		}
		b.WriteByte(body[i])
	}
	return b.String(), nil
}
