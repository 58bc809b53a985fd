package enhance

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentbus/agentbus/agents/agentkit"
)

// MaxVariants is the most variants an output holds, the original
// included.
const MaxVariants = 5

// maxExpansions bounds the extra terms.
const maxExpansions = 12

// token is a lower-cased word of the query and whether it was written
// like a name (a capital inside a sentence, an acronym, digits).
type token struct {
	lower string
	named bool
}

func tokenize(q string) []token {
	var out []token
	first := true
	for _, f := range strings.FieldsFunc(q, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-'.+#", r)
	}) {
		f = strings.Trim(f, "-'.")
		if f == "" {
			continue
		}
		r, _ := utf8.DecodeRuneInString(f)
		named := strings.IndexFunc(f, unicode.IsDigit) >= 0 ||
			(unicode.IsUpper(r) && !first) || (len(f) > 1 && strings.ToUpper(f) == f && strings.ToLower(f) != f)
		out = append(out, token{lower: strings.ToLower(f), named: named})
		first = false
	}
	return out
}

// terms are the query's content terms: thesaurus phrases of two words
// ("machine learning"), then single non-stop words.
func terms(toks []token) []string {
	var out []string
	for i := 0; i < len(toks); i++ {
		if i+1 < len(toks) {
			if bi := toks[i].lower + " " + toks[i+1].lower; thesaurus[bi] != nil || related[bi] != nil {
				out = append(out, bi)
				i++
				continue
			}
		}
		if !stopwords[toks[i].lower] {
			out = append(out, toks[i].lower)
		}
	}
	return out
}

// statementRules turn a question into the statement a document answering
// it would contain; $1 is the question's subject.
var statementRules = []struct {
	re   *regexp.Regexp
	tmpl string
}{
	{regexp.MustCompile(`^(?:what|who)\s+(is|are|was|were)\s+(?:a\s+|an\s+|the\s+)?(.+)$`), "$2 $1"},
	{regexp.MustCompile(`^how\s+(?:do|does|can|could|should|would|to)\s+(?:i\s+|we\s+|you\s+|one\s+)?(.+)$`), "steps to $1"},
	{regexp.MustCompile(`^why\s+(?:is|are|does|do|did|was|were)\s+(.+)$`), "$1 because"},
	{regexp.MustCompile(`^where\s+(?:is|are|can\s+i\s+find)\s+(?:the\s+)?(.+)$`), "$1 is located"},
	{regexp.MustCompile(`^when\s+(?:is|was|did|does|will)\s+(.+)$`), "$1 date"},
	{regexp.MustCompile(`^(?:is|are|can|does|do|did|should|will|could)\s+(.+)$`), "$1"},
}

// statement rewrites a question; ok is false when q is no question.
func statement(q string) (string, bool) {
	s := strings.ToLower(strings.TrimRight(strings.TrimSpace(q), "?!. "))
	for _, r := range statementRules {
		if r.re.MatchString(s) {
			return r.re.ReplaceAllString(s, r.tmpl), true
		}
	}
	if strings.HasSuffix(strings.TrimSpace(q), "?") {
		return s, true
	}
	return "", false
}

// quotedRE finds "quoted phrases", which are kept whole.
var quotedRE = regexp.MustCompile(`"([^"]+)"`)

// focus is the entity-focused form: quoted phrases and name-like words.
func focus(q string, toks []token) string {
	var parts []string
	for _, m := range quotedRE.FindAllStringSubmatch(q, -1) {
		parts = append(parts, `"`+strings.ToLower(m[1])+`"`)
	}
	for _, t := range toks {
		if t.named && !stopwords[t.lower] {
			parts = append(parts, t.lower)
		}
	}
	return strings.Join(parts, " ")
}

// Enhance runs the heuristic: synonyms and expansions from the embedded
// thesaurus, and up to max variants. It is deterministic and safe for
// concurrent use.
func Enhance(query string, max int) Output {
	if max <= 0 || max > MaxVariants {
		max = MaxVariants
	}
	original := strings.Join(strings.Fields(query), " ")
	toks := tokenize(original)
	ts := terms(toks)
	out := Output{Query: original, Method: agentkit.MethodHeuristic, Keywords: dedupe(ts), Synonyms: map[string][]string{}}
	inQuery := map[string]bool{}
	for _, t := range ts {
		inQuery[t] = true
	}
	var substituted []string
	replaced := false
	for _, t := range ts {
		syns := thesaurus[t]
		if len(syns) > 0 {
			out.Synonyms[t] = syns
		}
		if len(syns) > 0 && !inQuery[syns[0]] {
			substituted = append(substituted, syns[0])
			replaced = true
		} else {
			substituted = append(substituted, t)
		}
	}
	for _, t := range ts {
		for _, e := range append(append([]string(nil), thesaurus[t]...), related[t]...) {
			if !inQuery[e] && len(out.Expansions) < maxExpansions {
				out.Expansions = append(out.Expansions, e)
			}
		}
	}
	out.Expansions = dedupe(out.Expansions)
	candidates := []string{original, strings.Join(ts, " ")}
	if replaced {
		candidates = append(candidates, strings.Join(substituted, " "))
	}
	if s, ok := statement(original); ok {
		candidates = append(candidates, s)
	}
	// A focus of one short word ("go" of "… for serializing Go values")
	// matches nearly everything: it would add noise, not a view.
	if f := focus(original, toks); len(f) >= 4 {
		candidates = append(candidates, f)
	}
	if len(dedupe(candidates)) < 3 && len(out.Expansions) > 0 {
		candidates = append(candidates, strings.Join(ts, " ")+" "+strings.Join(out.Expansions[:min(3, len(out.Expansions))], " "))
	}
	out.Variants = dedupe(candidates)
	if len(out.Variants) > max {
		out.Variants = out.Variants[:max]
	}
	if out.Keywords == nil {
		out.Keywords = []string{}
	}
	if out.Expansions == nil {
		out.Expansions = []string{}
	}
	return out
}

// dedupe drops empty strings and repeats (compared lower-cased with
// blanks collapsed), keeping the first of each.
func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		s = strings.Join(strings.Fields(s), " ")
		k := strings.ToLower(s)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return out
}
