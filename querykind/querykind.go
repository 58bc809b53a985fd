package querykind

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// The thresholds of Classify.
const (
	// LongQueryWords: a query of at least this many words is complex.
	LongQueryWords = 25
	// minClauseWords: a clause needs this many words to count as one, so
	// that "bread and butter" is one clause, not two.
	minClauseWords = 3
	// manyClauses: a query of at least this many clauses is complex.
	manyClauses = 3
)

// analyticWords are words that ask for comparison, analysis or a report.
// Exact words, not prefixes, so that "reporter" or "different" do not
// count.
var analyticWords = set(
	"compare", "compares", "compared", "comparing", "comparison", "comparisons",
	"contrast", "contrasting", "versus", "vs",
	"analyze", "analyse", "analyzes", "analyses", "analyzing", "analysing", "analysis",
	"evaluate", "evaluating", "evaluation", "assess", "assessing", "assessment",
	"report", "tradeoff", "tradeoffs", "implications", "pros",
	"difference", "differences", "comprehensive", "thorough", "investigate", "breakdown",
)

// analyticPhrases are two-word phrases with the same meaning; the words are
// as split by Words ("trade-offs" is "trade offs").
var analyticPhrases = []string{"trade off", "trade offs", "in depth", "deep dive"}

// conjunctions split a sentence into clauses.
var conjunctions = set("and", "but", "while", "whereas", "then", "also")

// Verdict is Classify's answer.
type Verdict struct {
	Complex bool
	// Score grades the query in [0, 1]: 0.5 per rule that holds plus 0.02
	// per word (of at most LongQueryWords-1), capped at 1, so that a query
	// is complex exactly when its score is at least 0.5. It is not rounded.
	Score float64
	// Reasons says which rules made the query complex; nil when simple.
	Reasons []string
}

// Classify decides whether a query is complex. A query is complex when any
// of these rules holds (all that hold are given as reasons):
//
//  1. it is long: at least LongQueryWords words;
//  2. it asks for analysis: it contains a word of comparison, analysis,
//     evaluation or reporting ("compare", "vs", "analyze", "report",
//     "pros", "trade-offs", "in depth", … — see analyticWords);
//  3. it asks several questions: two or more question marks;
//  4. it asks why or how and goes on to a second clause ("how does raft
//     elect a leader and why is it safe");
//  5. it has three clauses or more.
//
// Clauses are the parts between punctuation (, ; : . ! ?) and the
// conjunctions and, but, while, whereas, then, also; a part counts as a
// clause only if it has at least three words. Words are as Words splits
// them. Classify is deterministic and safe for concurrent use.
func Classify(query string) Verdict {
	words := Words(query)
	var reasons []string
	if len(words) >= LongQueryWords {
		reasons = append(reasons, fmt.Sprintf("%d words", len(words)))
	}
	if w, ok := analyticTerm(words); ok {
		reasons = append(reasons, fmt.Sprintf("asks for analysis: %q", w))
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
	score := min(1, 0.5*float64(len(reasons))+0.02*float64(min(len(words), LongQueryWords-1)))
	return Verdict{Complex: len(reasons) > 0, Score: score, Reasons: reasons}
}

// Words splits s into the words the rules count: runs of letters and
// digits, lower-cased.
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func analyticTerm(words []string) (string, bool) {
	for i, w := range words {
		if analyticWords[w] {
			return w, true
		}
		if i > 0 {
			if p := words[i-1] + " " + w; slices.Contains(analyticPhrases, p) {
				return p, true
			}
		}
	}
	return "", false
}

// countClauses counts the parts of query of at least minClauseWords words
// between punctuation and conjunctions.
func countClauses(query string) int {
	n, run := 0, 0
	end := func() {
		if run >= minClauseWords {
			n++
		}
		run = 0
	}
	for _, part := range strings.FieldsFunc(query, func(r rune) bool { return strings.ContainsRune(",;:.!?", r) }) {
		for _, w := range Words(part) {
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

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
