package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Predicates of the facts Extract finds.
const (
	PredicateName      = "name"
	PredicateIs        = "is"
	PredicateWorksAt   = "works_at"
	PredicateWorksOn   = "works_on"
	PredicateWorksWith = "works_with"
	PredicatePrefers   = "prefers"
	PredicateLivesIn   = "lives_in"
	PredicateLikes     = "likes"
	PredicateNote      = "note"
)

// SubjectUser is the subject of every fact: the user who said it.
const SubjectUser = "user"

// Fact is one thing a user said about themselves.
type Fact struct {
	// Key is where the fact is stored: "<tenant>.<hash>"; empty until stored.
	Key       string `json:"key,omitempty"`
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	// Object is normalised: lower case, single spaces, no leading article.
	Object string `json:"object"`
	// Sentence is the sentence the fact was said in, as said.
	Sentence string `json:"sentence"`
	// You restates the fact in the second person: "you work with Go".
	You      string  `json:"you"`
	StoredAt string  `json:"stored_at,omitempty"`
	Score    float64 `json:"score,omitempty"`
}

// Hash identifies the normalised fact: the same statement, however it
// was phrased ("I'm a Go developer", "i am a go developer!"), hashes alike.
func (f Fact) Hash() string {
	sum := sha256.Sum256([]byte(f.Subject + "\x00" + f.Predicate + "\x00" + f.Object))
	return hex.EncodeToString(sum[:12])
}

// trigger finds the start of a statement. Go's regexp prefers the first
// alternative that matches, so longer phrases come first.
var trigger = regexp.MustCompile(`(?i)\b(my name is|call me|remember that|` +
	`i(?: work| am working|'m working|m working) (at|for|on|with)|` +
	`i(?: live| am living|'m living) in|i prefer|i (?:really )?(?:like|love|enjoy)|` +
	`i am|i'm|im)\b`)

// notMe are words after "I am" that make a state of mind or a request,
// not a fact: "I'm looking for…", "I am not sure…".
var notMe = map[string]bool{
	"not": true, "sorry": true, "sure": true, "unsure": true, "curious": true, "just": true, "also": true,
	"here": true, "glad": true, "afraid": true, "going": true, "still": true, "able": true, "unable": true,
	"confused": true, "trying": true, "looking": true, "asking": true, "wondering": true, "searching": true,
}

// questionStart marks a sentence that asks rather than tells.
var questionStart = map[string]bool{
	"what": true, "how": true, "why": true, "where": true, "when": true, "who": true, "which": true,
	"do": true, "does": true, "did": true, "can": true, "could": true, "would": true, "should": true,
	"is": true, "are": true, "am": true, "will": true,
}

// maxObjectWords bounds an object: a longer one is rarely a fact.
const (
	maxObjectWords = 8
	maxNoteWords   = 30
)

// Extract finds the facts a user states about themselves in text. It
// skips questions, so "what do I like?" stores nothing.
func Extract(text string) []Fact {
	var out []Fact
	for _, s := range splitSentences(strings.ReplaceAll(text, "’", "'")) {
		if isQuestion(s) && !strings.Contains(strings.ToLower(s), "remember that") {
			continue
		}
		body := strings.TrimRight(s, ".!?;: ")
		ms := trigger.FindAllStringSubmatchIndex(body, -1)
		for i, m := range ms {
			end := len(body)
			if i+1 < len(ms) {
				end = ms[i+1][0]
			}
			phrase := strings.ToLower(body[m[2]:m[3]])
			prep := ""
			if m[4] >= 0 {
				prep = strings.ToLower(body[m[4]:m[5]])
			}
			if f, ok := fact(phrase, prep, body[m[1]:end], strings.TrimSpace(s)); ok && !slices.ContainsFunc(out, func(g Fact) bool { return g.Hash() == f.Hash() }) {
				out = append(out, f)
			}
		}
	}
	return out
}

// fact makes a fact of a trigger phrase and the text after it.
func fact(phrase, prep, rest, sentence string) (Fact, bool) {
	said := object(rest, phrase == "remember that")
	if said == "" {
		return Fact{}, false
	}
	f := Fact{Subject: SubjectUser, Sentence: sentence, Object: normalize(said)}
	if f.Object == "" {
		return Fact{}, false
	}
	yours := secondPerson(said)
	switch {
	case phrase == "my name is" || phrase == "call me":
		f.Predicate, f.You = PredicateName, "your name is "+yours
	case phrase == "remember that":
		f.Predicate, f.You = PredicateNote, "you asked me to remember that "+yours
	case strings.Contains(phrase, "work"):
		f.Predicate = map[string]string{"at": PredicateWorksAt, "for": PredicateWorksAt, "on": PredicateWorksOn, "with": PredicateWorksWith}[prep]
		f.You = "you work " + prep + " " + yours
	case strings.Contains(phrase, "liv"):
		f.Predicate, f.You = PredicateLivesIn, "you live in "+yours
	case phrase == "i prefer":
		f.Predicate, f.You = PredicatePrefers, "you prefer "+yours
	case strings.HasSuffix(phrase, "like") || strings.HasSuffix(phrase, "love") || strings.HasSuffix(phrase, "enjoy"):
		f.Predicate, f.You = PredicateLikes, "you "+phrase[strings.LastIndex(phrase, " ")+1:]+" "+yours
	default: // i am, i'm, im
		first := strings.Fields(f.Object)[0]
		if notMe[first] || (strings.HasSuffix(first, "ing") && len(first) > 4) {
			return Fact{}, false
		}
		f.Predicate, f.You = PredicateIs, "you are "+yours
	}
	return f, true
}

// object is the statement's object as said: up to the first clause break,
// without a trailing conjunction, bounded in words.
func object(rest string, note bool) string {
	s := strings.TrimSpace(rest)
	if !note {
		for _, brk := range []string{",", " but ", " because ", " so ", " and i ", " and my ", " which ", " who "} {
			if i := strings.Index(strings.ToLower(s), brk); i >= 0 {
				s = s[:i]
			}
		}
	}
	s = strings.TrimSpace(s)
	for _, tail := range []string{" and", " but", " so", " too", " as well"} {
		s = strings.TrimSpace(strings.TrimSuffix(s, tail))
	}
	s = strings.Trim(s, ` "'“”()`)
	limit := maxObjectWords
	if note {
		limit = maxNoteWords
	}
	if n := len(strings.Fields(s)); n == 0 || n > limit {
		return ""
	}
	return strings.Join(strings.Fields(s), " ")
}

// normalize lower-cases an object, keeps letters, digits and inner
// punctuation that carries meaning (C++, .NET, node.js), and drops a
// leading article.
func normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("+#.-/' ", r) {
			return r
		}
		return ' '
	}, s)
	words := strings.Fields(s)
	if len(words) > 1 && (words[0] == "a" || words[0] == "an" || words[0] == "the") {
		words = words[1:]
	}
	return strings.Trim(strings.Join(words, " "), ".-' ")
}

// secondPerson turns the user's own words about themselves around:
// "my team" → "your team".
func secondPerson(s string) string {
	swap := map[string]string{"my": "your", "me": "you", "i": "you", "mine": "yours", "myself": "yourself", "i'm": "you're", "am": "are"}
	words := strings.Fields(s)
	for i, w := range words {
		if r, ok := swap[strings.ToLower(w)]; ok {
			words[i] = r
		}
	}
	return strings.Join(words, " ")
}

// splitSentences cuts text after '.', '!', '?', ';' or a line break that
// ends a sentence, keeping the terminator so questions can be told apart.
// A '.' inside a word (node.js, 2.0) does not end a sentence.
func splitSentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		end := c == '!' || c == '?' || c == ';' || c == '\n' ||
			(c == '.' && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n'))
		if end {
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

func isQuestion(s string) bool {
	if strings.HasSuffix(s, "?") {
		return true
	}
	w := strings.Fields(strings.ToLower(s))
	return len(w) > 0 && questionStart[strings.Trim(w[0], `"'(`)]
}
