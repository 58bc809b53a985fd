package sessions

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/events"
)

// Resolution is what Resolve made of a query.
type Resolution struct {
	// Query is the query to run: the follow-up rewritten to stand alone,
	// or the query unchanged.
	Query string
	// FollowUp says the query was taken for a follow-up and rewritten.
	FollowUp bool
	// Turn is the N of the turn it was resolved against, Subject what was
	// carried over from it.
	Turn    int
	Subject string
}

// Why says, for the plan's explanation, how the query was resolved ("" if
// it was not).
func (r Resolution) Why(original string) string {
	if !r.FollowUp {
		return ""
	}
	return fmt.Sprintf("follow-up resolved against turn %d (%s): %q → %q", r.Turn, r.Subject, original, r.Query)
}

// leads open a follow-up; Resolve strips them ("and what about …").
var leads = []string{
	"and", "but", "also", "what about", "how about", "what of", "same for", "same with",
	"same question for", "tell me more about", "more about",
}

// singular and plural pronouns stand for the previous turn's subject; the
// plural ones for all of its identifiers.
var (
	singular = []string{"it", "its", "it's", "itself", "this one", "that one", "the former", "the latter"}
	plural   = []string{"they", "them", "their", "theirs", "both", "these two", "those two"}
)

// maxFollowUpWords bounds a pronoun-led follow-up: a longer query that
// says "it" most likely stands alone.
const maxFollowUpWords = 10

// IsFollowUp reports whether query reads as a follow-up to an earlier
// turn: it opens with a continuation ("and …", "what about …", "how
// about …") or is short and refers back with a pronoun ("is it thread
// safe?", "how does it compare?").
func IsFollowUp(query string) bool {
	q := normalise(query)
	if q == "" {
		return false
	}
	if _, stripped := stripLeads(q); stripped {
		return true
	}
	return len(strings.Fields(q)) <= maxFollowUpWords && pronoun(q) != ""
}

// Resolve rewrites a follow-up against the session's turns (oldest first)
// deterministically: the subject of the turn it refers to (its
// identifiers such as sync.RWMutex or net/http, else its content words)
// replaces the pronoun, or leads the rest of the query. The turn is the
// newest whose subject shares a word with the follow-up ("and the
// mutex's read lock?" finds sync.RWMutex two turns back), else the
// newest with a subject. "and what about the read lock?" after "how does
// sync.RWMutex work" becomes "sync.RWMutex read lock". A query that is not
// a follow-up, or has no turn to refer to, comes back unchanged.
func Resolve(query string, history []events.Turn) Resolution {
	out := Resolution{Query: query}
	if len(history) == 0 || !IsFollowUp(query) {
		return out
	}
	rest, _ := stripLeads(normalise(query))
	rest = restoreCase(query, rest)
	p := pronoun(strings.ToLower(rest))
	if p == "" && startsQuestion(rest) {
		return out // "and how do channels work?" stands alone
	}
	if ids, _ := Subject(rest); p == "" && len(ids) > 0 {
		return switched(out, rest, ids[0], history)
	}
	t, ids, subject := referent(rest, history)
	if subject == "" {
		return out
	}
	if p != "" {
		with := subject
		if slices.Contains(plural, p) && len(ids) > 1 {
			with = strings.Join(ids, " and ")
		}
		rest = replacePronouns(rest, with)
	} else if !strings.Contains(strings.ToLower(rest), strings.ToLower(subject)) {
		rest = strings.TrimSpace(subject + " " + dropArticle(rest))
	}
	rest = strings.Join(strings.Fields(rest), " ")
	if rest == "" || strings.EqualFold(rest, strings.TrimSpace(query)) {
		return out
	}
	return Resolution{Query: rest, FollowUp: true, Turn: t.N, Subject: subject}
}

// switched resolves "what about sync.Mutex?" by asking the newest turn's
// question of the new subject: after "how does sync.RWMutex work" it
// becomes "how does sync.Mutex work". A longer rest stands alone.
func switched(out Resolution, rest, id string, history []events.Turn) Resolution {
	if len(strings.Fields(rest)) > 3 {
		return out
	}
	for i := len(history) - 1; i >= 0; i-- {
		t := history[i]
		asked := cmp.Or(t.ResolvedQuery, t.Query)
		ids, subject := Subject(asked)
		if len(ids) == 0 {
			continue
		}
		if strings.EqualFold(subject, id) {
			return out
		}
		q := strings.TrimRight(strings.TrimSpace(strings.Replace(asked, subject, id, 1)), "?!. ")
		return Resolution{Query: q, FollowUp: true, Turn: t.N, Subject: subject}
	}
	return out
}

// startsQuestion reports whether s opens with a question word.
func startsQuestion(s string) bool {
	f := strings.Fields(strings.ToLower(s))
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "how", "what", "what's", "why", "when", "where", "which", "who", "is", "are", "does", "do", "can", "should", "explain":
		return true
	}
	return false
}

// referent picks the turn a follow-up refers to, with its identifiers and
// subject: the turn that shares most with the follow-up — a word of it in
// the turn's subject counts 3, one its answer uses counts 1 — and the
// newest among equals. "and what about its read lock?" after a turn on
// sync.RWMutex (whose answer speaks of locks and readers) and one on
// net/url refers to the first.
func referent(rest string, history []events.Turn) (events.Turn, []string, string) {
	words := contentWords(rest)
	var best events.Turn
	var bestIDs []string
	bestSubject, bestScore := "", -1
	for i := len(history) - 1; i >= 0; i-- {
		t := history[i]
		ids, subject := Subject(cmp.Or(t.ResolvedQuery, t.Query))
		if subject == "" {
			continue
		}
		score := 0
		low := strings.ToLower(subject)
		answer := answerWords(t.Answer)
		for _, w := range words {
			if len(w) < 3 {
				continue
			}
			if len(w) >= 4 && strings.Contains(low, w) {
				score += 3
			}
			if answer.has(w) {
				score++
			}
		}
		if score > bestScore {
			best, bestIDs, bestSubject, bestScore = t, ids, subject, score
		}
	}
	return best, bestIDs, bestSubject
}

// words is a set of lowercased words.
type words map[string]bool

func answerWords(s string) words {
	out := words{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		out[w] = true
	}
	return out
}

// has reports whether the set holds w or a word that starts with it
// ("lock" finds "locks", "read" finds "readers").
func (ws words) has(w string) bool {
	if ws[w] {
		return true
	}
	for x := range ws {
		if strings.HasPrefix(x, w) && len(x) <= len(w)+4 {
			return true
		}
	}
	return false
}

var (
	// qualified is pkg.Symbol[.Member] with an optional import path
	// (sync.RWMutex, net/http.Client, bufio.Scanner.Split).
	qualified = regexp.MustCompile(`\b[a-z][a-z0-9_]*(?:/[a-z0-9_]+)*\.[A-Z][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?`)
	// importPath is a slashed package path (net/http, encoding/json).
	importPath = regexp.MustCompile(`\b[a-z][a-z0-9_]*(?:/[a-z0-9_]+)+\b`)
	// camel is an exported or camelCase Go name (RWMutex, WaitGroup, ReadAll).
	camel     = regexp.MustCompile(`\b(?:[A-Z]+[a-z0-9]+[A-Z][A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)\b`)
	backticks = regexp.MustCompile("`([^`]+)`")
)

// Subject is what a query is about: its identifiers (qualified names,
// import paths, Go names, `quoted` code), first one first, and as subject
// the first of them; or, with none, up to four content words.
func Subject(query string) (ids []string, subject string) {
	add := func(s string) {
		s = strings.Trim(s, ".,;:!?()")
		for _, have := range ids {
			if strings.Contains(have, s) {
				return
			}
		}
		ids = append(ids, s)
	}
	for _, m := range backticks.FindAllStringSubmatch(query, -1) {
		add(m[1])
	}
	for _, re := range []*regexp.Regexp{qualified, importPath, camel} {
		for _, m := range re.FindAllString(query, -1) {
			add(m)
		}
	}
	if len(ids) > 0 {
		return ids, ids[0]
	}
	words := contentWords(query)
	if len(words) > 4 {
		words = words[:4]
	}
	return nil, strings.Join(words, " ")
}

// stop are words that say how something is asked, not what about.
var stop = wordSet(`a an the and or but of in on at to for from with by about as into than then
		how what why when where which who whom whose does do did is are was were be been being can could should would will
		shall may might must i me my we our you your it its it's they them their this that these those there here
		explain explained explanation tell show describe work works working use used using go golang please detail details
		detailed example examples difference differences compare comparison versus vs between more also same else
		ok okay now so just really very some any all both one`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// contentWords are the query's lowercased words that are not stop words.
func contentWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '/' || r == '\'')
	}) {
		w = strings.Trim(w, ".'")
		if len(w) > 1 && !stop[w] {
			out = append(out, w)
		}
	}
	return out
}

// normalise lowercases, trims and drops closing punctuation.
func normalise(q string) string {
	return strings.TrimRight(strings.ToLower(strings.TrimSpace(q)), "?!. ")
}

// stripLeads removes every opening continuation; q is normalised.
func stripLeads(q string) (string, bool) {
	stripped := false
	for again := true; again; {
		again = false
		for _, l := range leads {
			if q == l || strings.HasPrefix(q, l+" ") || strings.HasPrefix(q, l+",") {
				q = strings.TrimLeft(strings.TrimPrefix(q, l), " ,")
				stripped, again = true, true
			}
		}
	}
	return q, stripped
}

// restoreCase takes the tail of the original query that the normalised
// rest stands for, so identifiers keep their case (RWMutex, not rwmutex).
func restoreCase(original, rest string) string {
	o := strings.TrimRight(strings.TrimSpace(original), "?!. ")
	if len(rest) <= len(o) && strings.EqualFold(o[len(o)-len(rest):], rest) {
		return o[len(o)-len(rest):]
	}
	return rest
}

// pronoun returns the first pronoun in q (lowercased), "" if none.
func pronoun(q string) string {
	padded := " " + strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if strings.ContainsRune(",;:?!()\"", r) {
			return ' '
		}
		return r
	}, q)), " ") + " "
	best, at := "", len(padded)
	for _, p := range append(slices.Clone(singular), plural...) {
		if i := strings.Index(padded, " "+p+" "); i >= 0 && (i < at || i == at && len(p) > len(best)) {
			best, at = p, i
		}
	}
	ws := strings.Fields(padded)
	for i, w := range ws {
		if (w == "this" || w == "that") && demonstrative(ws, i) || w == "one" && oneFor(ws, i) {
			// The space before ws[i] in padded, comparable with at.
			space := 0
			if i > 0 {
				space = 1 + len(strings.Join(ws[:i], " "))
			}
			if best == "" || space < at {
				best = w
			}
			break
		}
	}
	return best
}

// verbs follow "this" or "that" used as a pronoun ("does this block?",
// "how does that compare?").
var verbs = wordSet(`is does do did was work works mean means return returns handle handles block blocks compare
	compares differ differs behave behaves need needs require requires cost costs allocate allocates panic panics
	have has support supports scale scales`)

// demonstrative reports whether ws[i] ("this" or "that", lowercased
// words) stands for something said before, not for a noun after it: the
// query's last word ("explain this"), before a verb ("does this block"),
// or after "is" or "was" ("is this thread safe"; "does this package …"
// is a determiner).
func demonstrative(ws []string, i int) bool {
	switch {
	case i == len(ws)-1:
		return true
	case verbs[strings.Trim(ws[i+1], ",;:?!.")]:
		return true
	case i > 0 && (ws[i-1] == "is" || ws[i-1] == "was"):
		return true
	}
	return false
}

// replacePronouns puts with in place of every pronoun of s, whatever its
// case; a possessive "'s" after a pronoun goes too.
func replacePronouns(s, with string) string {
	words := strings.Fields(s)
	lower := make([]string, len(words))
	for i, w := range words {
		lower[i] = strings.ToLower(strings.TrimRight(w, ",;:?!"))
	}
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		core := lower[i]
		tail := w[len(strings.TrimRight(w, ",;:?!")):]
		if (core == "this" || core == "that") && demonstrative(lower, i) || core == "one" && oneFor(lower, i) {
			out = append(out, with+tail)
			continue
		}
		matched := false
		for _, p := range append(slices.Clone(singular), plural...) {
			pw := strings.Fields(p)
			if len(pw) > 1 {
				if i+len(pw) <= len(words) && strings.EqualFold(strings.Join(words[i:i+len(pw)], " "), p) {
					out = append(out, with)
					i += len(pw) - 1
					matched = true
					break
				}
				continue
			}
			if core == p || core == p+"'s" {
				out = append(out, with+tail)
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// takesOne are verbs after which a closing "one" stands for a thing
// named before ("when should I not use one?").
var takesOne = wordSet(`use need want create make pick choose copy reuse embed pass return allocate close`)

// oneFor reports whether ws[i] ("one") is the query's last word after a
// verb of takesOne.
func oneFor(ws []string, i int) bool {
	return i == len(ws)-1 && i > 0 && takesOne[ws[i-1]]
}

// dropArticle removes an opening "the", "a" or "an".
func dropArticle(s string) string {
	for _, a := range []string{"the ", "a ", "an "} {
		if len(s) > len(a) && strings.EqualFold(s[:len(a)], a) {
			return s[len(a):]
		}
	}
	return s
}
