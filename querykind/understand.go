package querykind

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The intents Understand tells apart.
const (
	// IntentCompare: the query weighs two or more things against each other.
	IntentCompare = "compare"
	// IntentExplain: the query asks what something is, why, or how it works.
	IntentExplain = "explain"
	// IntentHowTo: the query asks how to do something.
	IntentHowTo = "howto"
	// IntentLookup: anything else — the query names what it wants.
	IntentLookup = "lookup"
)

// Understanding is what a query asks, apart from what it searches for.
// It is a plain value; Understand builds a new one per call.
type Understanding struct {
	// Query is the query as given.
	Query string
	// Search is the text to search: the query's content words and
	// identifiers, in their order and as written, with instruction and
	// framing words (compare, difference, explain, in detail, how do I,
	// in Go, tell me, …) and common function words removed. It is never
	// empty when Query has a word.
	Search string
	// Identifiers are the Go-style identifiers in the query, as written
	// and in order, without duplicates: qualified names ("sync.RWMutex",
	// "bufio.Scanner", "http.Client.Do") and mixed-case names
	// ("WaitGroup", "ReadAll").
	Identifiers []string
	// Intent is one of IntentCompare, IntentExplain, IntentHowTo,
	// IntentLookup.
	Intent string
	// Detail says the query asks for depth ("in detail", "in depth",
	// "thoroughly", …).
	Detail bool
	// Sides are a comparison's sides ("sync.Mutex", "sync.RWMutex"), each
	// a Search text, in the query's order; nil unless the query compares
	// at least two distinct things.
	Sides []string
}

// Understand reads a query: what to search for, which identifiers it
// names, what it asks (Intent), whether it wants depth, and, for a
// comparison, the sides. It recognises comparisons written "A vs B",
// "A versus B", "A compared to B", "compare A and B", "difference(s)
// between A and B", "how do A and B differ", and "A or B" when the query
// asks for a choice ("should I use A or B") or both sides are
// identifiers. Understand is deterministic, uses no model and is safe for
// concurrent use.
func Understand(query string) Understanding {
	toks := tokenize(query)
	u := Understanding{Query: query, Intent: IntentLookup}
	for _, t := range toks {
		if t.ident && !slices.Contains(u.Identifiers, t.text) {
			u.Identifiers = append(u.Identifiers, t.text)
		}
	}
	// "compare two values": comparing is the operation asked for, not a
	// request to weigh things; the word stays a search term.
	if op := compareOperation(toks); op >= 0 {
		toks[op].keep = true
	}
	drop := framing(toks)
	u.Detail = hasPhrase(toks, detailPhrases)
	u.Search = searchText(toks, drop)
	if u.Search == "" {
		u.Search = allWords(toks)
	}
	u.Sides = sides(toks)
	if op := compareOperation(toks); op >= 0 {
		u.Sides = nil
	}
	switch {
	case u.Sides != nil || (hasWord(toks, compareWords) && compareOperation(toks) < 0):
		u.Intent = IntentCompare
	case hasPhrase(toks, howToPhrases):
		u.Intent = IntentHowTo
	case hasPhrase(toks, explainPhrases):
		u.Intent = IntentExplain
	}
	return u
}

// quantityWords after a compare verb make it an operation: "compare two
// strings", "compare both values", "compare them".
var quantityWords = set("two", "2", "both", "multiple", "several", "many", "all", "them", "these", "those")

// compareOperation returns the index of a compare verb directly followed
// by a quantity word, or -1.
func compareOperation(toks []token) int {
	for i, t := range toks[:max(len(toks)-1, 0)] {
		if !t.punct && !t.ident && (t.lower == "compare" || t.lower == "compares" || t.lower == "comparing") &&
			!toks[i+1].punct && quantityWords[toks[i+1].lower] {
			return i
		}
	}
	return -1
}

// token is one word or one clause-ending punctuation mark of a query.
type token struct {
	text  string // as written, trimmed of surrounding punctuation
	lower string
	punct bool // a clause boundary: , ; : ? ! ( ) or a sentence-ending period
	ident bool // a Go-style identifier
	keep  bool // content even though it is a framing word
}

// wordRune reports whether r may appear inside a word. Dots, slashes,
// hyphens, underscores and apostrophes join words ("sync.Mutex",
// "net/http", "SHA-256", "don't"); they are trimmed at a word's ends.
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._/-'’", r)
}

func tokenize(q string) []token {
	var toks []token
	for i := 0; i < len(q); {
		r, n := utf8.DecodeRuneInString(q[i:])
		if !wordRune(r) {
			if strings.ContainsRune(",;:?!()[]", r) {
				toks = append(toks, token{text: string(r), lower: string(r), punct: true})
			}
			i += n
			continue
		}
		j := i
		for j < len(q) {
			r, n := utf8.DecodeRuneInString(q[j:])
			if !wordRune(r) {
				break
			}
			j += n
		}
		w := q[i:j]
		i = j
		trimmed := strings.TrimRight(w, "._/-'’")
		endsSentence := strings.HasSuffix(w, ".") && !strings.EqualFold(trimmed, "vs")
		w = strings.TrimLeft(trimmed, "._/-'’")
		if w != "" {
			toks = append(toks, token{text: w, lower: strings.ToLower(w), ident: isIdentifier(w)})
		}
		if endsSentence {
			toks = append(toks, token{text: ".", lower: ".", punct: true})
		}
	}
	return toks
}

// isIdentifier reports whether w is written like a Go identifier that a
// search should match as one: a qualified name (dot-separated Go
// identifiers, not all of one letter, so "e.g" is not one) or a single
// mixed-case name with an upper-case letter after its first ("WaitGroup",
// "RWMutex", "ReadAll"; not "Go" or "JSON").
func isIdentifier(w string) bool {
	if strings.ContainsAny(w, "/-'’") {
		return false
	}
	parts := strings.Split(w, ".")
	if len(parts) > 1 {
		long := false
		for _, p := range parts {
			if !goIdent(p) {
				return false
			}
			long = long || utf8.RuneCountInString(p) > 1
		}
		return long
	}
	if !goIdent(w) {
		return false
	}
	var lower, innerUpper bool
	for i, r := range w {
		lower = lower || unicode.IsLower(r)
		innerUpper = innerUpper || (i > 0 && unicode.IsUpper(r))
	}
	return lower && innerUpper
}

func goIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(unicode.IsLetter(r) || r == '_' || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

// Phrases are lower-case word sequences matched against tokens.
var (
	detailPhrases = phrases("in detail", "in more detail", "in great detail", "in depth", "in-depth",
		"thoroughly", "thorough", "detailed", "at length", "deep dive", "comprehensive", "comprehensively", "exhaustively")
	howToPhrases = phrases("how do i", "how can i", "how to", "how should i", "how would i", "how do you",
		"how can you", "how does one", "how do we", "how can we", "best way to", "way to", "is there a way",
		"what should i use to", "i want to", "i need to", "help me")
	explainPhrases = phrases("explain", "explains", "describe", "what is", "what are", "what's", "whats",
		"what does", "what do", "why", "tell me about", "how does", "how do", "meaning of", "purpose of", "overview of")
	// framingPhrases are removed from the search text wherever they occur.
	framingPhrases = phrases("in detail", "in more detail", "in great detail", "in depth", "at length",
		"deep dive", "in go", "in golang", "using go", "with go", "go's", "tell me", "show me", "give me",
		"help me", "can you", "could you", "i want to", "i need to", "is there a way", "best way to",
		"way to", "pros and cons", "trade-offs", "tradeoffs",
		"compared to", "compared with", "as opposed to", "in terms of", "meaning of", "purpose of", "overview of",
		"when to use", "when should i use", "should i use", "which one", "which is better", "the difference",
		"what's", "whats")
	// compareWords mark a comparison even when no sides are found.
	compareWords = set("compare", "compares", "compared", "comparing", "comparison", "comparisons", "versus",
		"vs", "difference", "differences", "differ", "differs", "contrast", "contrasting")
)

// framingWords are single words of instruction or framing, and common
// function words, that never go into the search text.
var framingWords = set(
	// instruction and framing
	"compare", "compares", "compared", "comparing", "comparison", "comparisons", "versus", "vs",
	"difference", "differences", "differ", "differs", "different", "between", "contrast", "contrasting",
	"explain", "explains", "explaining", "describe", "describes", "detail", "detailed", "thorough",
	"thoroughly", "in-depth", "comprehensive", "comprehensively", "exhaustively", "please", "golang",
	"example", "examples", "tell", "show", "give", "understand", "mean", "means", "better", "best",
	"should", "use", "using", "used", "prefer", "choose", "vs.", "versus.",
	// function words
	"a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "at", "from", "into",
	"about", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "it's", "this", "that",
	"these", "those", "there", "i", "me", "my", "we", "our", "you", "your", "one", "do", "does", "did",
	"doing", "done", "can", "could", "would", "will", "shall", "may", "might", "must", "how", "what",
	"why", "when", "where", "which", "who", "whom", "whose", "if", "then", "than", "so", "some", "any",
	"get", "want", "need", "way", "also", "just", "really", "very", "them", "they", "their", "he", "she",
	"him", "her", "up", "out", "over", "s", "e.g", "i.e", "etc",
)

func phrases(ps ...string) [][]string {
	out := make([][]string, len(ps))
	for i, p := range ps {
		out[i] = strings.Fields(p)
	}
	// Longest first, so that "in more detail" wins over "in detail".
	slices.SortStableFunc(out, func(a, b []string) int { return len(b) - len(a) })
	return out
}

// matchAt returns the length of the longest phrase starting at toks[i],
// or 0. Identifiers never match a phrase word: "http.Client.Do" is no "do".
func matchAt(toks []token, i int, ps [][]string) int {
	for _, p := range ps {
		if i+len(p) > len(toks) {
			continue
		}
		ok := true
		for k, w := range p {
			if t := toks[i+k]; t.punct || t.ident || t.lower != w {
				ok = false
				break
			}
		}
		if ok {
			return len(p)
		}
	}
	return 0
}

func hasPhrase(toks []token, ps [][]string) bool {
	for i := range toks {
		if matchAt(toks, i, ps) > 0 {
			return true
		}
	}
	return false
}

func hasWord(toks []token, words map[string]bool) bool {
	return slices.ContainsFunc(toks, func(t token) bool { return !t.punct && !t.ident && words[t.lower] })
}

// framing marks the tokens that are not content: framing phrases and
// words, and punctuation.
func framing(toks []token) []bool {
	drop := make([]bool, len(toks))
	for i := 0; i < len(toks); i++ {
		if n := matchAt(toks, i, framingPhrases); n > 0 {
			for k := range n {
				drop[i+k] = true
			}
			i += n - 1
			continue
		}
		t := toks[i]
		drop[i] = t.punct || (!t.ident && !t.keep && framingWords[t.lower])
	}
	// "how does X work": the closing "work" frames the question.
	if hasWord(toks, set("how")) {
		for i := len(toks) - 1; i >= 0; i-- {
			if toks[i].punct {
				continue
			}
			if toks[i].lower == "work" || toks[i].lower == "works" {
				drop[i] = true
			}
			break
		}
	}
	return drop
}

func searchText(toks []token, drop []bool) string {
	var words []string
	for i, t := range toks {
		if !drop[i] {
			words = append(words, t.text)
		}
	}
	return strings.Join(words, " ")
}

func allWords(toks []token) string {
	var words []string
	for _, t := range toks {
		if !t.punct {
			words = append(words, t.text)
		}
	}
	return strings.Join(words, " ")
}
