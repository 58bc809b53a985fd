package compose

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentbus/agentbus/llm"
)

// Tuning of the extractive scorer.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// lambda weighs relevance against redundancy in MMR.
	lambda = 0.7
	// duplicate is the token-set similarity above which a sentence is
	// dropped as saying what a chosen one says.
	duplicate = 0.6
	minWords  = 4
	maxWords  = 80
)

// sentence is one candidate sentence of one hit.
type sentence struct {
	text  string
	hit   int // index into the hits, best first
	pos   int // position within the hit's text, from 0
	terms []string
	set   map[string]bool
	lex   float64 // BM25 over the query terms
	score float64 // relevance, lexical and positional, in [0, 1]
}

// terms tokenises like the rest of agentbus and strips one common
// inflection so that "acknowledged" meets "acknowledges" and "messages"
// meets "message".
func terms(text string) []string {
	words := llm.Tokenize(text)
	for i, w := range words {
		words[i] = stem(w)
	}
	return words
}

// stem strips the first of -ing, -ed, -es, -s, -e that leaves at least
// three letters ("process" keeps its "ss"). It is crude on purpose: both
// the query and the sentences go through it, so it only has to agree
// with itself.
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s", "e"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 && !(suf == "s" && strings.HasSuffix(w, "ss")) {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

// sentences cuts every hit's text into candidate sentences: paragraphs and
// list items first, then sentence ends. Headings, code blocks and
// fragments too short or too long to stand alone are skipped.
func sentences(hits []hit) []sentence {
	var out []sentence
	for h, hit := range hits {
		pos := 0
		for _, para := range paragraphs(hit.Text) {
			for _, s := range splitSentences(para) {
				ts := terms(s)
				if n := len(strings.Fields(s)); n < minWords || n > maxWords || len(ts) == 0 || codeLike(s) || fragment(s) {
					continue
				}
				set := make(map[string]bool, len(ts))
				for _, t := range ts {
					set[t] = true
				}
				out = append(out, sentence{text: s, hit: h, pos: pos, terms: ts, set: set})
				pos++
			}
		}
	}
	return out
}

// codeLike reports a "sentence" that is a declaration or code rather than
// prose — a Go signature such as "func (u *URL) Query() Values", a struct
// body, a comment — which reads badly in an answer.
func codeLike(s string) bool {
	t := strings.TrimSpace(s)
	for _, p := range []string{"func ", "type ", "var ", "const ", "package ", "import "} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return strings.ContainsAny(t, "{}") || strings.Contains(t, "//") || strings.Contains(t, ":=")
}

// fragment reports whether s is the tail of a sentence cut short (a
// split at an abbreviation or a qualified name's dot): it opens with a
// plain lowercase word. A sentence may open with an identifier
// ("os.Open opens …", "len(s) is …"), which is no fragment.
func fragment(s string) bool {
	first, _, _ := strings.Cut(s, " ")
	if first == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(first)
	if !unicode.IsLower(r) {
		return false
	}
	for _, c := range first {
		if !unicode.IsLower(c) && c != ',' {
			return false // a name: "iOS", "os.Open", "len(s)"
		}
	}
	return true
}

// paragraphs splits text at blank lines and list items, dropping headings
// and fenced code, and joins the lines of a paragraph with single spaces.
func paragraphs(text string) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	fenced := false
	for line := range strings.Lines(text) {
		l := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~"):
			flush()
			fenced = !fenced
		case fenced:
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "|"):
			flush()
		case isListItem(l):
			flush()
			cur = append(cur, stripListMarker(l))
		default:
			cur = append(cur, strings.Join(strings.Fields(l), " "))
		}
	}
	flush()
	return out
}

func isListItem(l string) bool { return stripListMarker(l) != l }

func stripListMarker(l string) string {
	for _, m := range []string{"- ", "* ", "+ ", "> "} {
		if strings.HasPrefix(l, m) {
			return strings.TrimSpace(l[len(m):])
		}
	}
	i := 0
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && l[i+1] == ' ' {
		return strings.TrimSpace(l[i+2:])
	}
	return l
}

// splitSentences cuts a paragraph after '.', '!' or '?' (and closing
// quotes or brackets) when the next word starts like a sentence does: an
// upper-case letter, a digit or an opening quote. Abbreviations such as
// "e.g." are left alone because a lower-case word follows them.
func splitSentences(para string) []string {
	var out []string
	start := 0
	for i := 0; i < len(para); {
		r, size := utf8.DecodeRuneInString(para[i:])
		i += size
		if r != '.' && r != '!' && r != '?' {
			continue
		}
		end := i
		for end < len(para) && strings.ContainsRune(`"')]”’`, rune(para[end])) {
			end++
		}
		if end >= len(para) || para[end] != ' ' {
			continue
		}
		next, _ := utf8.DecodeRuneInString(para[end+1:])
		if unicode.IsUpper(next) || unicode.IsDigit(next) || strings.ContainsRune(`"'(“[`, next) {
			out = append(out, strings.TrimSpace(para[start:end]))
			start = end + 1
			i = end + 1
		}
	}
	if rest := strings.TrimSpace(para[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// score gives every sentence its BM25 over the query terms, with idf
// counted over the candidate sentences, and a relevance in [0, 1] that
// adds a small prior for early sentences and better-ranked hits.
func score(cands []sentence, query []string) {
	if len(cands) == 0 {
		return
	}
	df := map[string]int{}
	var total float64
	for _, s := range cands {
		total += float64(len(s.terms))
		for t := range s.set {
			df[t]++
		}
	}
	avg := total / float64(len(cands))
	n := float64(len(cands))
	q := slices.Compact(slices.Sorted(slices.Values(query)))
	best := 0.0
	for i := range cands {
		s := &cands[i]
		tf := map[string]int{}
		for _, t := range s.terms {
			tf[t]++
		}
		for _, t := range q {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			s.lex += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(len(s.terms))/avg))
		}
		best = max(best, s.lex)
	}
	for i := range cands {
		s := &cands[i]
		lex := 0.0
		if best > 0 {
			lex = s.lex / best
		}
		s.score = 0.7*lex + 0.15/float64(1+s.pos) + 0.15/float64(1+s.hit)
	}
}

// pick chooses up to k sentences by maximal marginal relevance. When some
// sentence shares a term with the query, only such sentences compete;
// otherwise (hits found by meaning, not words) the best-placed ones do.
func pick(cands []sentence, k int) []sentence {
	pool := slices.DeleteFunc(slices.Clone(cands), func(s sentence) bool { return s.lex == 0 })
	if len(pool) == 0 {
		pool = slices.Clone(cands)
		k = min(k, 3)
	}
	var chosen []sentence
	for len(chosen) < k && len(pool) > 0 {
		bestI, bestV := -1, math.Inf(-1)
		for i, c := range pool {
			sim := 0.0
			for _, s := range chosen {
				sim = max(sim, jaccard(c.set, s.set))
			}
			if sim >= duplicate {
				continue
			}
			if v := lambda*c.score - (1-lambda)*sim; v > bestV {
				bestI, bestV = i, v
			}
		}
		if bestI < 0 {
			break
		}
		chosen = append(chosen, pool[bestI])
		pool = slices.Delete(pool, bestI, bestI+1)
	}
	return chosen
}

func jaccard(a, b map[string]bool) float64 {
	inter := 0
	for t := range a {
		if b[t] {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// byHitOrder orders sentences as they appear in the ranked hits.
func byHitOrder(a, b sentence) int {
	return cmp.Or(cmp.Compare(a.hit, b.hit), cmp.Compare(a.pos, b.pos))
}
