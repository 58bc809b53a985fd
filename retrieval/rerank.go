package retrieval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reranker names.
const (
	// RerankNone keeps the fused order.
	RerankNone = "none"
	// RerankDeterministic is the Deterministic reranker.
	RerankDeterministic = "deterministic"
	// RerankLLM is the LLM reranker.
	RerankLLM = "llm"
)

// ErrRerank wraps every reranking failure.
var ErrRerank = errors.New("retrieval: rerank")

// RerankQuery is what a reranker knows of the query.
type RerankQuery struct {
	// Text is the text searched: content words and identifiers, framing
	// words removed (querykind.Understanding.Search).
	Text string
	// Identifiers are the Go-style identifiers of the query
	// ("sync.RWMutex", "http.Client.Do"), matched as package + symbol.
	Identifiers []string
}

// Reranked is a reranker's answer.
type Reranked struct {
	// Hits are the reranked hits, best first.
	Hits []Hit `json:"-"`
	// By is the reranker that ordered Hits: RerankDeterministic or
	// RerankLLM (RerankNone when there was nothing to order).
	By string `json:"by"`
	// Fallback, when set, says why the reranker asked for did not order
	// the hits and By did instead.
	Fallback string `json:"fallback,omitempty"`
}

// Reranker reorders fused hits for a query. Implementations are safe for
// concurrent use and never drop or invent hits, except that a reranker
// may return fewer (the LLM reranker keeps its top N).
type Reranker interface {
	// Name is the reranker's name: RerankDeterministic, RerankLLM.
	Name() string
	// Rerank reorders hits, best first.
	Rerank(ctx context.Context, q RerankQuery, hits []Hit) (Reranked, error)
}

// Deterministic is the offline reranker. It scores each hit by the fused
// order it came in with (a prior, so that reranking refines the fusion
// rather than replacing it), the share of the query's terms its document
// covers across the hits (terms weighted by how rare they are among the
// hits: a document answering every part of the query beats one repeating
// a part), how close together the chunk has them, the terms found in its
// title and headings (document name, "type X", "func Y"), and the query's
// identifiers matched as package + symbol. Terms are compared by a light
// stem and by prefix, so that "atomically" meets "atomic". The zero value
// uses the default weights; it is safe for concurrent use.
type Deterministic struct {
	// Depth is how many of the first hits are reordered; the rest keep
	// their order after them. Default 50.
	Depth int
	// Weights, when set, replaces DefaultRerankWeights().
	Weights *RerankWeights
}

// RerankWeights weigh the parts of the deterministic score.
type RerankWeights struct {
	Prior    float64 // 1/(1+ln(rank)) of the fused order
	DocCover float64 // idf-weighted share of the query's terms in the hits of the chunk's document
	Prox     float64 // how tightly the chunk holds its matched terms
	Title    float64 // idf-weighted share of the terms in the chunk's title and headings
	Ident    float64 // per identifier: package and symbol matched
	Package  float64 // a query term names the chunk's package ("gzip", "UTF-8", "atomically")
}

// DefaultRerankWeights are the weights Deterministic uses by default,
// chosen on the shipped labelled set (corpus.SetShipped) only.
func DefaultRerankWeights() RerankWeights {
	return RerankWeights{Prior: 0.5, DocCover: 1, Prox: 0.5, Title: 0.5, Ident: 1.2, Package: 0.4}
}

var _ Reranker = Deterministic{}

// Name is RerankDeterministic.
func (Deterministic) Name() string { return RerankDeterministic }

// Rerank reorders the first Depth hits by the deterministic score.
func (d Deterministic) Rerank(_ context.Context, q RerankQuery, hits []Hit) (Reranked, error) {
	depth := d.Depth
	if depth <= 0 {
		depth = 50
	}
	n := min(depth, len(hits))
	terms := queryTerms(q.Text)
	if n < 2 || (len(terms) == 0 && len(q.Identifiers) == 0) {
		return Reranked{Hits: hits, By: RerankDeterministic}, nil
	}
	w := DefaultRerankWeights()
	if d.Weights != nil {
		w = *d.Weights
	}
	scores := scoreHits(w, terms, q.Identifiers, hits[:n])
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return a - b
	})
	out := make([]Hit, 0, len(hits))
	for _, i := range order {
		out = append(out, hits[i])
	}
	return Reranked{Hits: append(out, hits[n:]...), By: RerankDeterministic}, nil
}

// hitText is one candidate, tokenised.
type hitText struct {
	title, text []string // stems
	pkg         string   // the document's package name: the last element of its id
	path        string   // the document id without a "go/" style prefix
}

// scoreHits computes the deterministic score of each hit.
func scoreHits(w RerankWeights, terms []string, idents []string, hits []Hit) []float64 {
	cands := make([]hitText, len(hits))
	df := make([]int, len(terms))
	docTerms := map[string][]bool{} // document → which terms any of its candidates has
	for i, h := range hits {
		c := hitText{title: stems(h.Title), text: stems(h.Text)}
		doc := h.DocID
		if doc == "" {
			doc, _, _ = strings.Cut(h.ID, "#")
		}
		c.path = strings.ToLower(doc)
		c.pkg = c.path[strings.LastIndexByte(c.path, '/')+1:]
		cands[i] = c
		seen := docTerms[doc]
		if seen == nil {
			seen = make([]bool, len(terms))
			docTerms[doc] = seen
		}
		for t, term := range terms {
			if contains(c.title, term) || contains(c.text, term) {
				df[t]++
				seen[t] = true
			}
		}
	}
	idf := make([]float64, len(terms))
	var total float64
	for t := range terms {
		idf[t] = math.Log(1 + float64(len(hits))/float64(1+df[t]))
		total += idf[t]
	}
	scores := make([]float64, len(hits))
	for i, h := range hits {
		c := cands[i]
		var title, docCov float64
		pkg := false
		s := w.Prior / (1 + math.Log(float64(i+1)))
		doc := h.DocID
		if doc == "" {
			doc, _, _ = strings.Cut(h.ID, "#")
		}
		for t, term := range terms {
			if contains(c.title, term) {
				title += idf[t]
			}
			if docTerms[doc][t] {
				docCov += idf[t]
			}
			pkg = pkg || match(c.pkg, term)
		}
		if pkg {
			s += w.Package
		}
		if total > 0 {
			s += w.DocCover*docCov/total + w.Title*title/total
		}
		s += w.Prox * proximity(c.text, terms)
		for _, id := range idents {
			s += w.Ident * identMatch(id, c, h)
		}
		scores[i] = s
	}
	return scores
}

// identMatch scores one identifier against a hit in [0, 1.125]: half for the
// package ("sync" of "sync.RWMutex" is the document's package or ends its
// path), half for the symbol ("RWMutex" in the chunk's headings, or a
// quarter when only in its text). An identifier without a package
// ("WaitGroup") is all symbol.
func identMatch(id string, c hitText, h Hit) float64 {
	parts := strings.Split(id, ".")
	pkg, syms := "", parts
	if len(parts) > 1 && parts[0] != "" && unicode.IsLower(rune(parts[0][0])) {
		pkg, syms = strings.ToLower(parts[0]), parts[1:]
	}
	var s float64
	symWeight := 1.0
	if pkg != "" {
		symWeight = 0.5
		if c.pkg == pkg || strings.HasSuffix(c.path, "/"+pkg) {
			s += 0.5
		}
	}
	if len(syms) == 0 {
		return s
	}
	sym := syms[0]
	switch {
	case definedBy(h.Title, syms):
		// the symbol's own section ("… › type RWMutex"), not one of its
		// methods': where a question about it is answered first
		s += symWeight * 1.25
	case headingHas(h.Title, sym):
		s += symWeight
	case wordIn(h.Text, sym):
		s += symWeight / 2
	}
	return s
}

// definedBy reports whether the chunk's last heading is the section
// that defines the identifier's symbols: "type RWMutex" for sync.RWMutex,
// "func (*Client) Do" for http.Client.Do, "func ReadAll" for io.ReadAll.
func definedBy(title string, syms []string) bool {
	parts := strings.Split(title, TitleSeparator)
	last := strings.TrimSpace(parts[len(parts)-1])
	switch len(syms) {
	case 1:
		return last == "type "+syms[0] || last == "func "+syms[0] || strings.HasPrefix(last, "func "+syms[0]+"[")
	case 2:
		return strings.HasPrefix(last, "func (") && wordIn(last, syms[0]) && strings.HasSuffix(last, ") "+syms[1])
	}
	return false
}

// headingHas reports whether sym names the chunk's heading ("… › type
// RWMutex", "… › func (*RWMutex) RLock").
func headingHas(title, sym string) bool {
	for part := range strings.SplitSeq(title, TitleSeparator) {
		if wordIn(part, sym) && (strings.HasPrefix(part, "type ") || strings.HasPrefix(part, "func ")) {
			return true
		}
	}
	return false
}

// wordIn reports whether w occurs in s as a whole word, case-sensitively.
func wordIn(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !identRune(rune(s[j-1]))) && (end == len(s) || !identRune(rune(s[end]))) {
			return true
		}
		i = j + 1
	}
}

func identRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// proximity is how tightly text holds the query terms it has, in [0, 1]:
// (matched-1)/(shortest window holding them all-1) over the terms; 0 when
// it has fewer than two.
func proximity(text []string, terms []string) float64 {
	if len(terms) < 2 {
		return 0
	}
	at := make([]int, len(text)) // index+1 of the term at each position, 0 none
	var want []bool = make([]bool, len(terms))
	matched := 0
	for p, w := range text {
		for t, term := range terms {
			if match(w, term) {
				at[p] = t + 1
				if !want[t] {
					want[t] = true
					matched++
				}
				break
			}
		}
	}
	if matched < 2 {
		return 0
	}
	// The shortest window holding every matched term.
	count := make([]int, len(terms))
	have, best, lo := 0, len(text)+1, 0
	for hi, t := range at {
		if t == 0 {
			continue
		}
		if count[t-1] == 0 {
			have++
		}
		count[t-1]++
		for have == matched {
			if w := hi - lo + 1; w < best {
				best = w
			}
			if lt := at[lo]; lt != 0 {
				count[lt-1]--
				if count[lt-1] == 0 {
					have--
				}
			}
			lo++
		}
	}
	return float64(matched-1) / float64(max(best-1, 1)) * float64(matched) / float64(len(terms))
}

func contains(words []string, term string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return match(w, term) })
}

// match compares stems: equal, or one a prefix of the other when both
// have at least five letters ("compress", "compression").
func match(w, term string) bool {
	if w == term {
		return true
	}
	if len(w) < 5 || len(term) < 5 {
		return false
	}
	return strings.HasPrefix(w, term) || strings.HasPrefix(term, w)
}

// rerankStop are words that say nothing about a chunk.
var rerankStop = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"on": true, "for": true, "with": true, "is": true, "are": true, "be": true, "it": true, "its": true,
	"this": true, "that": true, "by": true, "at": true, "as": true, "from": true, "into": true, "how": true,
	"do": true, "i": true, "what": true, "can": true, "does": true, "my": true, "me": true, "go": true,
}

// queryTerms are the distinct stems of the query's words.
func queryTerms(text string) []string {
	var out []string
	for _, s := range stems(text) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// stems splits text into lower-case words of letters and digits, drops
// stop words and stems the rest; a word of digits joined by a hyphen to
// the word before it also yields the two joined ("SHA-256" gives sha, 256
// and sha256). One pass, one allocation per kept word at most: it runs
// over every candidate's text.
func stems(text string) []string {
	out := make([]string, 0, len(text)/6)
	var word []byte
	prev, sep := "", byte(0) // the word before and the byte that ended it
	flush := func(end byte) {
		if len(word) == 0 {
			prev, sep = "", end
			return
		}
		w := string(word)
		if !rerankStop[w] {
			out = append(out, stem(w))
		}
		if sep == '-' && prev != "" && allDigits(w) {
			out = append(out, prev+w)
		}
		prev, sep, word = w, end, word[:0]
	}
	for _, r := range text {
		switch {
		case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || '0' <= r && r <= '9'):
			word = append(word, byte(r))
		case r < utf8.RuneSelf && 'A' <= r && r <= 'Z':
			word = append(word, byte(r+'a'-'A'))
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			word = utf8.AppendRune(word, unicode.ToLower(r))
		case r < utf8.RuneSelf:
			flush(byte(r))
		default:
			flush(' ')
		}
	}
	flush(' ')
	return out
}

func allDigits(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return true
}

// stem strips a few English suffixes, enough for query words to meet
// document words ("atomically" → "atomic", "files" → "file").
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	for _, s := range [][2]string{{"ically", "ic"}, {"ally", "al"}, {"ies", "i"}, {"sses", "ss"}, {"ness", ""},
		{"ing", ""}, {"edly", ""}, {"ed", ""}, {"ly", ""}, {"es", ""}, {"s", ""}} {
		if strings.HasSuffix(w, s[0]) && len(w)-len(s[0])+len(s[1]) >= 3 {
			if s[0] == "s" && strings.HasSuffix(w, "ss") {
				return w
			}
			if s[0] == "es" && !strings.HasSuffix(w, "shes") && !strings.HasSuffix(w, "ches") && !strings.HasSuffix(w, "xes") {
				continue
			}
			return trimE(w[:len(w)-len(s[0])] + s[1])
		}
	}
	return trimE(w)
}

// trimE drops a final "e" and turns a final "y" into "i", so that
// "parse" meets "parsing" and "entry" meets "entries".
func trimE(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "e"):
		return w[:len(w)-1]
	case len(w) > 3 && strings.HasSuffix(w, "y"):
		return w[:len(w)-1] + "i"
	}
	return w
}

// CheckRerank reports whether every hit of got is one of in, once:
// rerankers reorder, they never invent.
func CheckRerank(in, got []Hit) error {
	ids := make(map[string]bool, len(in))
	for _, h := range in {
		ids[h.ID] = true
	}
	seen := make(map[string]bool, len(got))
	for _, h := range got {
		if !ids[h.ID] || seen[h.ID] {
			return fmt.Errorf("%w: hit %q unknown or repeated", ErrRerank, h.ID)
		}
		seen[h.ID] = true
	}
	return nil
}
