package entities

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Confidence of each heuristic rule: how often the rule is right, roughly.
const (
	confDate      = 0.95
	confGazetteer = 0.9
	confAmbiguous = 0.85
	confNumber    = 0.9
	confSuffix    = 0.8
	confProduct   = 0.7
	confPerson    = 0.6
	confAcronym   = 0.6
	confSingle    = 0.5
)

// contextWords is how many words either side of an entity its Context
// keeps.
const contextWords = 3

// word is a run of letters and digits (with inner - ' . & as in "AT&T",
// "Node.js", "O'Brien") and its byte offsets.
type word struct {
	text       string
	start, end int
	// initial: the word begins the query or a sentence, so a capital
	// says nothing about it.
	initial bool
}

func splitWords(q string) []word {
	var out []word
	initial := true
	for i := 0; i < len(q); {
		r, n := utf8.DecodeRuneInString(q[i:])
		if !isWordRune(r) {
			if r == '.' || r == '!' || r == '?' || r == '\n' {
				initial = true
			}
			i += n
			continue
		}
		start := i
		for i < len(q) {
			r, n := utf8.DecodeRuneInString(q[i:])
			if isWordRune(r) {
				i += n
				continue
			}
			if strings.ContainsRune("-'.&’", r) && i+n < len(q) {
				if next, _ := utf8.DecodeRuneInString(q[i+n:]); isWordRune(next) {
					i += n
					continue
				}
			}
			break
		}
		out = append(out, word{text: q[start:i], start: start, end: i, initial: initial})
		initial = false
	}
	return out
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func startsUpper(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r)
}

// extractor collects entities whose spans never overlap.
type extractor struct {
	query   string
	words   []word
	claimed []span
	out     []Entity
}

func (x *extractor) free(s span) bool {
	for _, c := range x.claimed {
		if s.overlaps(c) {
			return false
		}
	}
	return true
}

func (x *extractor) add(s span, typ string, conf float64) {
	x.claimed = append(x.claimed, s)
	x.out = append(x.out, Entity{Text: x.query[s.start:s.end], Type: typ, Confidence: conf, Start: s.start, End: s.end})
}

// extract runs the rules in order of trust: dates, capitalised names of
// two words or more, the gazetteer, single odd-cased words, numbers.
func extract(query string, dates []dated, invalid []span) []Entity {
	x := &extractor{query: query, words: splitWords(query), claimed: invalid}
	for _, d := range dates {
		x.add(d.span, TypeDate, confDate)
	}
	x.names()
	x.gazetteer()
	x.singles()
	x.numbers()
	for i := range x.out {
		x.out[i].Context = x.context(span{x.out[i].Start, x.out[i].End})
	}
	sort.Slice(x.out, func(i, j int) bool { return x.out[i].Start < x.out[j].Start })
	return x.out
}

// names finds runs of capitalised words ("Ada Lovelace", "Bank of
// America") and types them by the gazetteer, suffixes and prefixes.
func (x *extractor) names() {
	ws := x.words
	for i := 0; i < len(ws); i++ {
		if !startsUpper(ws[i].text) || !x.free(span{ws[i].start, ws[i].end}) {
			continue
		}
		j := i + 1
		for j < len(ws) && x.adjacent(ws[j-1], ws[j]) && x.free(span{ws[j].start, ws[j].end}) {
			lw := strings.ToLower(ws[j].text)
			if startsUpper(ws[j].text) {
				j++
			} else if connectors[lw] && j+1 < len(ws) && startsUpper(ws[j+1].text) && x.adjacent(ws[j], ws[j+1]) {
				j += 2
			} else {
				break
			}
		}
		run := ws[i:j]
		for len(run) > 0 && run[0].initial && leadWords[strings.ToLower(run[0].text)] {
			run = run[1:]
		}
		for len(run) > 0 && connectors[strings.ToLower(run[0].text)] {
			run = run[1:]
		}
		if len(run) >= 2 {
			s := span{run[0].start, run[len(run)-1].end}
			typ, conf := x.classifyName(run)
			s, typ, conf = x.withVersion(s, typ, conf)
			x.add(s, typ, conf)
		}
		i = j - 1
	}
}

// adjacent: only blanks between a and b (a comma ends a name).
func (x *extractor) adjacent(a, b word) bool {
	return strings.TrimSpace(x.query[a.end:b.start]) == "" && b.start > a.end
}

func (x *extractor) classifyName(run []word) (string, float64) {
	text := x.query[run[0].start:run[len(run)-1].end]
	first, last := strings.ToLower(run[0].text), strings.ToLower(run[len(run)-1].text)
	switch {
	case gazetteer.lookup(text) != "":
		return gazetteer.lookup(text), confGazetteer
	case orgSuffixes[last] || orgPrefixes[first]:
		return TypeOrg, confSuffix
	case eventSuffixes[last]:
		return TypeEvent, confSuffix
	case placeSuffixes[last] || placePrefixes[first]:
		return TypePlace, confSuffix
	case gazetteer.lookup(run[0].text) == TypeOrg, gazetteer.lookup(run[len(run)-1].text) == TypeProduct:
		return TypeProduct, confProduct // "Google Cloud", "Apache Kafka"
	case len(run) <= 3 && allLetters(run):
		return TypePerson, confPerson
	}
	return TypeConcept, confSingle
}

func allLetters(run []word) bool {
	for _, w := range run {
		for _, r := range w.text {
			if !unicode.IsLetter(r) && r != '\'' && r != '-' {
				return false
			}
		}
	}
	return true
}

// versionRE is a version number after a name: "Windows 11", "Go 1.26".
var versionRE = regexp.MustCompile(`^ (\d+(?:\.\d+)*)\b`)

// withVersion extends a name by the version number that follows it; a
// year ("Paris 2024") is not a version.
func (x *extractor) withVersion(s span, typ string, conf float64) (span, string, float64) {
	if typ == TypePlace || typ == TypeOrg || typ == TypeEvent {
		return s, typ, conf
	}
	m := versionRE.FindStringSubmatchIndex(x.query[s.end:])
	if m == nil {
		return s, typ, conf
	}
	v := x.query[s.end+m[2] : s.end+m[3]]
	if len(v) == 4 && (strings.HasPrefix(v, "19") || strings.HasPrefix(v, "20")) {
		return s, typ, conf
	}
	ext := span{s.start, s.end + m[1]}
	if !x.free(span{s.end, ext.end}) {
		return s, typ, conf
	}
	return ext, TypeProduct, max(conf, confProduct)
}

// gazetteer finds the embedded names of places, organisations, products
// and concepts, in any case unless the name is also an ordinary word.
func (x *extractor) gazetteer() {
	for _, m := range gazetteer.re.FindAllStringIndex(x.query, -1) {
		s := span{m[0], m[1]}
		text := x.query[s.start:s.end]
		typ := gazetteer.lookup(text)
		if typ == "" || !x.free(s) {
			continue
		}
		conf := confGazetteer
		if gazetteer.entries[strings.ToLower(text)].needsCap {
			conf = confAmbiguous
		}
		s, typ, conf = x.withVersion(s, typ, conf)
		x.add(s, typ, conf)
	}
}

// singles types one-word names: acronyms ("RRF"), inner capitals
// ("iPhone", "JetStream") and capitalised words inside a sentence.
func (x *extractor) singles() {
	for _, w := range x.words {
		s := span{w.start, w.end}
		if !x.free(s) || w.text == "I" {
			continue
		}
		var upper, lower, inner int
		for i, r := range w.text {
			switch {
			case unicode.IsUpper(r):
				upper++
				if i > 0 {
					inner++
				}
			case unicode.IsLower(r):
				lower++
			}
		}
		typ, conf := "", 0.0
		switch {
		case lower == 0 && upper >= 2 && len(w.text) <= 6:
			typ, conf = TypeConcept, confAcronym
		case inner > 0 && lower > 0:
			typ, conf = TypeProduct, confAcronym
		case upper > 0 && startsUpper(w.text) && !w.initial && !leadWords[strings.ToLower(w.text)]:
			typ, conf = TypeConcept, confSingle
		default:
			continue
		}
		s, typ, conf = x.withVersion(s, typ, conf)
		x.add(s, typ, conf)
	}
}

// numberRE is an amount: "42", "3.5%", "$1,200", "10 million", "5k".
var numberRE = regexp.MustCompile(`(?i)(?:[$€£]|\b)\d+(?:[.,]\d+)*(?:%|\s?(?:percent|thousand|million|billion|trillion|bn|k)\b)?`)

func (x *extractor) numbers() {
	for _, m := range numberRE.FindAllStringIndex(x.query, -1) {
		s := span{m[0], m[1]}
		if x.free(s) && x.wholeWord(s) {
			x.add(s, TypeNumber, confNumber)
		}
	}
}

// wholeWord: s does not begin or end inside a word ("x86", "v2").
func (x *extractor) wholeWord(s span) bool {
	if s.start > 0 {
		if r, _ := utf8.DecodeLastRuneInString(x.query[:s.start]); isWordRune(r) {
			return false
		}
	}
	if s.end < len(x.query) {
		if r, _ := utf8.DecodeRuneInString(x.query[s.end:]); isWordRune(r) {
			return false
		}
	}
	return true
}

// context is the entity with up to contextWords blank-separated words
// either side, blanks collapsed.
func (x *extractor) context(s span) string {
	type field struct{ start, end int }
	var fs []field
	for i := 0; i < len(x.query); {
		for i < len(x.query) && isBlank(x.query[i]) {
			i++
		}
		start := i
		for i < len(x.query) && !isBlank(x.query[i]) {
			i++
		}
		if i > start {
			fs = append(fs, field{start, i})
		}
	}
	first, last := -1, -1
	for i, f := range fs {
		if f.end > s.start && first < 0 {
			first = i
		}
		if f.start < s.end {
			last = i
		}
	}
	if first < 0 || last < 0 {
		return x.query[s.start:s.end]
	}
	from, to := max(0, first-contextWords), min(len(fs)-1, last+contextWords)
	return strings.Join(strings.Fields(x.query[fs[from].start:fs[to].end]), " ")
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// dominantTypes orders the types found by their summed confidence, then
// by name.
func dominantTypes(es []Entity) []string {
	weight := map[string]float64{}
	for _, e := range es {
		weight[e.Type] += e.Confidence
	}
	out := make([]string, 0, len(weight))
	for t := range weight {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if weight[out[i]] != weight[out[j]] {
			return weight[out[i]] > weight[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}
