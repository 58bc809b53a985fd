package profiles

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// The rules are those of the orchestrator's heuristic planner
// (orchestrator.Classify), restated here because agents do not import the
// orchestrator; keep the two in step.
const (
	longQueryWords = 25
	minClauseWords = 3
	manyClauses    = 3
)

var analyticWords = set(
	"compare", "compares", "compared", "comparing", "comparison", "comparisons",
	"contrast", "contrasting", "versus", "vs",
	"analyze", "analyse", "analyzes", "analyses", "analyzing", "analysing", "analysis",
	"evaluate", "evaluating", "evaluation", "assess", "assessing", "assessment",
	"report", "tradeoff", "tradeoffs", "implications", "pros",
	"difference", "differences", "comprehensive", "thorough", "investigate", "breakdown",
)

var analyticPhrases = []string{"trade off", "trade offs", "in depth", "deep dive"}

var conjunctions = set("and", "but", "while", "whereas", "then", "also")

// complexity grades a query: complex when any rule holds (long, analytic,
// several questions, why/how with a second clause, three clauses). The
// score is 0.5 per rule plus 0.02 per word (of at most 24), capped at 1,
// so a query is complex exactly when its score is at least 0.5.
func complexity(query string) Complexity {
	words := splitClauseWords(query)
	var reasons []string
	if len(words) >= longQueryWords {
		reasons = append(reasons, fmt.Sprintf("%d words", len(words)))
	}
	for i, w := range words {
		if analyticWords[w] {
			reasons = append(reasons, fmt.Sprintf("asks for analysis: %q", w))
			break
		}
		if i > 0 && slices.Contains(analyticPhrases, words[i-1]+" "+w) {
			reasons = append(reasons, fmt.Sprintf("asks for analysis: %q", words[i-1]+" "+w))
			break
		}
	}
	if n := strings.Count(query, "?"); n >= 2 {
		reasons = append(reasons, fmt.Sprintf("%d questions", n))
	}
	clauses := countClauses(query)
	if clauses >= 2 && (slices.Contains(words, "why") || slices.Contains(words, "how")) {
		reasons = append(reasons, fmt.Sprintf("why/how with %d clauses", clauses))
	} else if clauses >= manyClauses {
		reasons = append(reasons, fmt.Sprintf("%d clauses", clauses))
	}
	score := round(min(1, 0.5*float64(len(reasons))+0.02*float64(min(len(words), longQueryWords-1))))
	c := Complexity{Level: LevelSimple, Score: score, Reasons: reasons}
	if len(reasons) > 0 {
		c.Level = LevelComplex
	} else {
		c.Reasons = []string{}
	}
	return c
}

func countClauses(query string) int {
	n, run := 0, 0
	end := func() {
		if run >= minClauseWords {
			n++
		}
		run = 0
	}
	for _, part := range strings.FieldsFunc(query, func(r rune) bool { return strings.ContainsRune(",;:.!?", r) }) {
		for _, w := range splitClauseWords(part) {
			if conjunctions[w] {
				end()
				continue
			}
			run++
		}
		end()
	}
	return n
}

// splitClauseWords splits as the planner does: runs of letters and digits.
func splitClauseWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
