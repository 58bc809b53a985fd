package profiles

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Intents a query can have.
const (
	IntentTroubleshooting = "troubleshooting"
	IntentComparison      = "comparison"
	IntentSummary         = "summary"
	IntentHowTo           = "how-to"
	IntentDefinition      = "definition"
	IntentNavigational    = "navigational"
	IntentRecommendation  = "recommendation"
	IntentInformational   = "informational"
)

// Modalities of the content a query wants.
const (
	ModalityCode  = "code"
	ModalityImage = "image"
	ModalityData  = "data"
	ModalityText  = "text"
)

// rule matches a query by its words or by phrases of its lower-cased,
// blank-collapsed text.
type rule struct {
	name    string
	words   map[string]bool
	phrases []string
}

func (r rule) match(words []string, text string) (string, bool) {
	for _, w := range words {
		if r.words[w] {
			return w, true
		}
	}
	for _, p := range r.phrases {
		if strings.Contains(" "+text+" ", " "+p+" ") {
			return p, true
		}
	}
	return "", false
}

// intentRules are tried in order; the first that matches wins.
var intentRules = []rule{
	{IntentTroubleshooting, set("error", "errors", "fix", "fixing", "failing", "fails", "failed", "failure", "crash",
		"crashes", "crashing", "broken", "exception", "debug", "debugging", "bug", "panic", "timeout", "refused",
		"restarting", "stacktrace", "traceback", "troubleshoot", "troubleshooting", "oom"),
		[]string{"not working", "doesn't work", "does not work", "won't start"}},
	{IntentComparison, set("compare", "compared", "comparing", "comparison", "vs", "versus", "difference",
		"differences", "contrast", "tradeoffs"), []string{"better than", "trade offs", "pros and cons"}},
	{IntentSummary, set("summarize", "summarise", "summary", "overview", "recap", "tldr", "digest", "brief"), nil},
	{IntentHowTo, set("steps", "guide", "tutorial", "install", "setup", "configure", "walkthrough"),
		[]string{"how to", "how do", "how can", "how should", "set up"}},
	{IntentDefinition, set("define", "definition", "meaning", "what's"), []string{"what is", "what are", "meaning of"}},
	{IntentNavigational, set("login", "homepage", "website", "site", "url", "download", "official", "signin"),
		[]string{"log in", "sign in", "docs for", "go to"}},
	{IntentRecommendation, set("best", "recommend", "recommended", "recommendation", "top", "alternatives"),
		[]string{"should i"}},
}

var modalityRules = []rule{
	{ModalityCode, set("code", "function", "snippet", "api", "sdk", "syntax", "compile", "compiler", "class",
		"method", "regex", "script", "python", "golang", "javascript", "typescript", "java", "rust", "sql",
		"bash", "json", "yaml", "struct", "interface", "goroutine", "stacktrace", "traceback"), nil},
	{ModalityImage, set("image", "images", "picture", "pictures", "photo", "photos", "diagram", "screenshot", "logo"), nil},
	{ModalityData, set("table", "csv", "statistics", "stats", "dataset", "chart", "percentage", "figures", "metrics",
		"numbers", "average", "median"), []string{"how many", "how much"}},
}

func classifyBy(rules []rule, words []string, text, otherwise string) (string, string) {
	for _, r := range rules {
		if w, ok := r.match(words, text); ok {
			return r.name, w
		}
	}
	return otherwise, ""
}

var (
	quotedRE = regexp.MustCompile(`"[^"]+"|'[^']{3,}'|` + "`[^`]+`")
	// codeRE: camelCase, snake_case, dotted.paths, calls(), ::, paths,
	// error codes and hex.
	codeRE    = regexp.MustCompile(`\b[a-z]+[A-Z]\w*\b|\b\w+_\w+\b|\b\w+\.\w+\.\w+\b|\w\(\)|::|(?:^|\s)/\w+/|\b[A-Z]{1,3}\d{3,}\b|\b0x[0-9a-fA-F]+\b|\.(?:go|py|js|ts|rs|java|yaml|yml|json)\b`)
	digitRE   = regexp.MustCompile(`\d`)
	acronymRE = regexp.MustCompile(`\b[A-Z]{2,6}\b`)
	// properNameRE: a capitalised word that does not begin the query.
	properNameRE = regexp.MustCompile(`\S\s+\p{Lu}\p{Ll}+`)
	domainRE     = regexp.MustCompile(`\b[\w-]+\.(?:com|org|net|io|dev|gov|edu)\b`)
)

// signals are the evidence for lexical and for semantic retrieval, each
// with the reasons that count.
type signals struct {
	lexical, semantic float64
	lexWhy, semWhy    []string
}

var conceptWords = set("why", "how", "explain", "explained", "meaning", "concept", "concepts", "similar", "like",
	"about", "overview", "summary", "ideas", "understand", "intuition", "approach", "approaches", "relationship")

func measure(query string, words []string, intent string) signals {
	var s signals
	lex := func(w float64, why string) { s.lexical += w; s.lexWhy = append(s.lexWhy, why) }
	sem := func(w float64, why string) { s.semantic += w; s.semWhy = append(s.semWhy, why) }
	question := strings.HasSuffix(strings.TrimSpace(query), "?") ||
		(len(words) > 0 && slices.Contains([]string{"what", "why", "how", "who", "when", "where", "which", "can", "does", "is", "are", "should"}, words[0]))
	if quotedRE.MatchString(query) {
		lex(0.4, "quoted phrase")
	}
	if codeRE.MatchString(query) {
		lex(0.3, "code identifier")
	}
	if digitRE.MatchString(query) {
		lex(0.2, "numbers or versions")
	}
	if acronymRE.MatchString(query) {
		lex(0.1, "acronym")
	}
	if properNameRE.MatchString(query) {
		lex(0.2, "proper name")
	}
	if len(words) <= 3 && !question {
		lex(0.3, "short keyword query")
	}
	if intent == IntentNavigational || domainRE.MatchString(query) {
		lex(0.2, "navigational")
	}
	if intent == IntentTroubleshooting {
		lex(0.2, "error text")
	}
	if question {
		sem(0.3, "question")
	}
	if len(words) >= 6 {
		sem(0.2, "natural-language sentence")
	}
	if len(words) >= 12 {
		sem(0.1, "long")
	}
	for _, w := range words {
		if conceptWords[w] {
			sem(0.3, fmt.Sprintf("conceptual word %q", w))
			break
		}
	}
	switch intent {
	case IntentHowTo, IntentDefinition, IntentSummary, IntentComparison, IntentRecommendation:
		sem(0.2, intent+" intent")
	}
	s.lexical, s.semantic = round(min(1, 0.1+s.lexical)), round(min(1, 0.1+s.semantic))
	return s
}

func round(x float64) float64 { return float64(int(x*100+0.5)) / 100 }

func splitWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
