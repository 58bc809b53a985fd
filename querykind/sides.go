package querykind

import (
	"slices"
	"strings"
)

// Words and phrases that find a comparison's sides.
var (
	// vsMarkers stand between two sides: "A vs B", "A is different from B".
	vsMarkers = phrases("vs", "vs.", "versus", "compared to", "compared with", "as opposed to",
		"different from", "differ from", "differs from", "in contrast to", "in comparison to")
	// betweenCues make a following "between" introduce sides.
	betweenCues = set("difference", "differences", "differ", "differs", "distinguish", "choose", "choosing",
		"decide", "deciding", "compare", "comparing", "comparison", "contrast", "pick", "tradeoffs", "trade-offs")
	// compareVerbs introduce the sides they precede: "compare A and B".
	compareVerbs = set("compare", "compares", "comparing", "comparison", "contrast", "contrasting")
	// listSplitters separate the sides of a list: "A and B", "A, B or C".
	listSplitters = set("and", "or", "&", ",", "with", "to", "against", "vs", "versus")
	// rightStops end a side that runs to the right: "A vs B for reads".
	rightStops = set("for", "when", "regarding", "which", "where", "if", "because", "while", "so")
	// leftStops end a side that runs to the left: "the speed of A vs B".
	leftStops = set("of", "between", "use", "using", "is", "are", "choose", "pick", "prefer", "should")
	// choiceCues make "A or B" a comparison when the sides are no identifiers.
	choiceCues = phrases("should i use", "should i pick", "should i choose", "which", "when to use",
		"prefer", "choose", "better", "pros and cons", "trade-offs", "tradeoffs")
)

// sides finds a comparison's sides, each a Search text, or nil.
func sides(toks []token) []string {
	for _, find := range []func([]token) [][]token{vsSides, betweenSides, compareSides, differSides, orSides} {
		if s := normalizeSides(find(toks)); s != nil {
			return s
		}
	}
	return nil
}

// clauseStart is the index of the first token of the clause holding toks[i].
func clauseStart(toks []token, i int) int {
	for j := i - 1; j >= 0; j-- {
		if toks[j].punct {
			return j + 1
		}
	}
	return 0
}

// runEnd is the index past the last token of the run starting at i: it
// ends at punctuation (but a comma when commas list sides) or a word of
// stops.
func runEnd(toks []token, i int, stops map[string]bool, commas bool) int {
	for j := i; j < len(toks); j++ {
		t := toks[j]
		if (t.punct && !(commas && t.text == ",")) || (!t.ident && stops[t.lower]) {
			return j
		}
	}
	return len(toks)
}

// afterLast trims seg to what follows its last word of stops.
func afterLast(seg []token, stops map[string]bool) []token {
	for j := len(seg) - 1; j >= 0; j-- {
		if !seg[j].ident && stops[seg[j].lower] {
			return seg[j+1:]
		}
	}
	return seg
}

// split cuts seg at its splitter words.
func split(seg []token, splitters map[string]bool) [][]token {
	var out [][]token
	start := 0
	for j, t := range seg {
		if !t.ident && splitters[t.lower] {
			out = append(out, seg[start:j])
			start = j + 1
		}
	}
	return append(out, seg[start:])
}

// vsSides reads "A vs B [vs C]", "A compared to B", "A is different from B".
func vsSides(toks []token) [][]token {
	for i := range toks {
		n := matchAt(toks, i, vsMarkers)
		if n == 0 {
			continue
		}
		left := afterLast(toks[clauseStart(toks, i):i], leftStops)
		end := runEnd(toks, i+n, rightStops, false)
		out := [][]token{left}
		// Further markers in the right run: "A vs B vs C".
		seg, start := toks[i+n:end], 0
		for j := 0; j < len(seg); j++ {
			if m := matchAt(seg, j, vsMarkers); m > 0 {
				out = append(out, seg[start:j])
				start = j + m
				j += m - 1
			}
		}
		return append(out, seg[start:])
	}
	return nil
}

// betweenSides reads "the difference(s) between A and B", "choose between A or B".
func betweenSides(toks []token) [][]token {
	cue := false
	for i, t := range toks {
		if t.ident || t.punct {
			continue
		}
		if betweenCues[t.lower] {
			cue = true
		}
		if t.lower == "between" && cue {
			return split(toks[i+1:runEnd(toks, i+1, rightStops, true)], listSplitters)
		}
	}
	return nil
}

// compareSides reads "compare A and B", "compare A with B", "a comparison of A, B and C".
func compareSides(toks []token) [][]token {
	for i, t := range toks {
		if t.ident || t.punct || !compareVerbs[t.lower] {
			continue
		}
		seg := toks[i+1 : runEnd(toks, i+1, rightStops, true)]
		// "compare the performance of A and B": the sides follow "of".
		if k := slices.IndexFunc(seg, func(t token) bool { return !t.ident && listSplitters[t.lower] }); k > 0 {
			if o := slices.IndexFunc(seg[:k], func(t token) bool { return t.lower == "of" || t.lower == "between" }); o >= 0 {
				seg = seg[o+1:]
			}
		}
		return split(seg, listSplitters)
	}
	return nil
}

// differSides reads "how do A and B differ".
func differSides(toks []token) [][]token {
	for i, t := range toks {
		if !t.ident && (t.lower == "differ" || t.lower == "differs") {
			return split(toks[clauseStart(toks, i):i], set("and", "&", ","))
		}
	}
	return nil
}

// orSides reads "should I use A or B", and "A or B" of two identifiers.
func orSides(toks []token) [][]token {
	cue := hasPhrase(toks, choiceCues)
	for i, t := range toks {
		if t.ident || t.lower != "or" || i == 0 || i == len(toks)-1 {
			continue
		}
		if !cue && !(toks[i-1].ident && toks[i+1].ident) {
			continue
		}
		left := afterLast(toks[clauseStart(toks, i):i], leftStops)
		right := toks[i+1 : runEnd(toks, i+1, rightStops, false)]
		return append([][]token{left}, split(right, set("or"))...)
	}
	return nil
}

// normalizeSides turns segments into Search texts, dropping empty and
// repeated ones; nil unless two or more remain. A one-word side takes the
// other side's head noun: "buffered vs unbuffered channels" compares
// "buffered channels" and "unbuffered channels".
func normalizeSides(segs [][]token) []string {
	var words [][]token
	seen := map[string]bool{}
	for _, seg := range segs {
		drop := framing(seg)
		var kept []token
		for i, t := range seg {
			if !drop[i] {
				kept = append(kept, t)
			}
		}
		key := strings.ToLower(joinText(kept))
		if len(kept) == 0 || seen[key] {
			continue
		}
		seen[key] = true
		words = append(words, kept)
	}
	if len(words) < 2 {
		return nil
	}
	var head *token
	for _, w := range words {
		if last := w[len(w)-1]; len(w) >= 2 && !last.ident {
			head = &last
		}
	}
	out := make([]string, len(words))
	for i, w := range words {
		if head != nil && len(w) == 1 && !w[0].ident && w[0].lower != head.lower {
			w = append(slices.Clip(w), *head)
		}
		out[i] = joinText(w)
	}
	return out
}

func joinText(toks []token) string {
	s := make([]string, len(toks))
	for i, t := range toks {
		s[i] = t.text
	}
	return strings.Join(s, " ")
}
