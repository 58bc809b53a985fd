package compose

import (
	"fmt"
	"strings"
)

// without says what an answer lacks when a step of a capability failed.
var without = map[string]string{
	"entity_extraction": "no date or metadata filters were applied to the search",
	"profile_selection": "the search used its default profiles",
	"query_enhancement": "the search ran the query alone, without rephrasings",
	"memory":            "what you told earlier was not recalled",
	"web_search":        "no web results were used",
	"select":            "no web results were used",
	"search":            "no documents were searched",
	"ingest":            "the web pages found were not indexed",
	"detailed_report":   "no report was written",
	"summarize":         "no summary was written",
}

// limitations says which steps failed and what the answer lacks for it:
// a "## Limitations" section in a report, a note after a summary; "" when
// nothing failed.
func (c *composition) limitations() string {
	if len(c.problems) == 0 {
		return ""
	}
	var lines []string
	for _, p := range c.problems {
		what := without[p.Capability]
		if what == "" {
			what = "its output is missing"
		}
		why := ""
		if p.Error != "" {
			why = " (" + oneLine(p.Error, 160) + ")"
		}
		lines = append(lines, fmt.Sprintf("the %s step failed%s, so %s", p.Capability, why, what))
	}
	if c.report {
		var b strings.Builder
		b.WriteString("## Limitations\n\n")
		for _, l := range lines {
			b.WriteString("- " + capitalize(l) + ".\n")
		}
		return b.String() + "\n"
	}
	return "\nNote: " + strings.Join(lines, "; ") + ".\n"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// oneLine is s on one line, at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
