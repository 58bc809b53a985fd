package profiles

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentbus/agentbus/agents/agentkit"
)

// Profile families: what kind of retrieval a profile name stands for.
const (
	familyLexical  = "lexical"
	familySemantic = "semantic"
	familyHybrid   = "hybrid"
	familyOther    = "other"
)

// otherConfidence is the confidence of a profile whose name says nothing.
const otherConfidence = 0.3

// minEnsembleConfidence: below it a profile stays an alternative even in
// an ensemble (the two best are always selected).
const minEnsembleConfidence = 0.25

func family(name string) string {
	n := strings.ToLower(name)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(n, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("hybrid"):
		return familyHybrid
	case has("vector", "semantic", "dense", "embed", "knn"):
		return familySemantic
	case has("bm25", "lexical", "keyword", "text", "sparse"):
		return familyLexical
	}
	return familyOther
}

// Select decides the profiles for a query among the available ones
// (default bm25 and vector) and whether to run them as an ensemble. It is
// deterministic and safe for concurrent use.
func Select(query string, available []string, ensemble bool) Output {
	if len(available) == 0 {
		available = DefaultProfiles
	}
	words := splitWords(query)
	text := strings.Join(words, " ")
	intent, intentWhy := classifyBy(intentRules, words, text, IntentInformational)
	modality, _ := classifyBy(modalityRules, words, text, ModalityText)
	if modality == ModalityText && codeRE.MatchString(query) {
		modality = ModalityCode
	}
	cx := complexity(query)
	sig := measure(query, words, intent)
	mixed := sig.lexical >= 0.4 && sig.semantic >= 0.4

	scored := make([]Choice, 0, len(available))
	for _, name := range available {
		c := Choice{Name: name, Confidence: otherConfidence}
		switch family(name) {
		case familyLexical:
			c.Confidence = sig.lexical
		case familySemantic:
			c.Confidence = sig.semantic
		case familyHybrid:
			c.Confidence = round(min(1, (sig.lexical+sig.semantic)/2+0.1))
		}
		scored = append(scored, c)
	}
	sort.SliceStable(scored, func(i, j int) bool {
		if scored[i].Confidence != scored[j].Confidence {
			return scored[i].Confidence > scored[j].Confidence
		}
		return scored[i].Name < scored[j].Name
	})

	var why []string
	if ensemble {
		why = append(why, "ensemble requested")
	}
	if cx.Level == LevelComplex {
		why = append(why, "complex query")
	}
	if mixed {
		why = append(why, "mixed lexical and semantic signals")
	}
	out := Output{Query: query, Method: agentkit.MethodHeuristic, Intent: intent, Modality: modality, Complexity: cx,
		Signals: Signals{Lexical: sig.lexical, Semantic: sig.semantic}}
	out.Ensemble = len(why) > 0 && len(scored) >= 2
	n := 1
	if out.Ensemble {
		n = 2
		for n < len(scored) && scored[n].Confidence >= minEnsembleConfidence {
			n++
		}
	}
	out.Selected, out.Alternatives = scored[:n], append([]Choice{}, scored[n:]...)
	out.Reasoning = reasoning(out, intentWhy, sig, why)
	return out
}

func reasoning(out Output, intentWhy string, sig signals, why []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "intent %s", out.Intent)
	if intentWhy != "" {
		fmt.Fprintf(&b, " (%q)", intentWhy)
	}
	fmt.Fprintf(&b, ", modality %s, %s (score %.2f)", out.Modality, out.Complexity.Level, out.Complexity.Score)
	fmt.Fprintf(&b, "; lexical %.2f", sig.lexical)
	if len(sig.lexWhy) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(sig.lexWhy, ", "))
	}
	fmt.Fprintf(&b, ", semantic %.2f", sig.semantic)
	if len(sig.semWhy) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(sig.semWhy, ", "))
	}
	names := make([]string, len(out.Selected))
	for i, c := range out.Selected {
		names[i] = c.Name
	}
	switch {
	case out.Ensemble:
		fmt.Fprintf(&b, "; ensemble of %s: %s", strings.Join(names, ", "), strings.Join(why, ", "))
	case len(why) > 0:
		fmt.Fprintf(&b, "; %s, but only %s is available", strings.Join(why, ", "), names[0])
	default:
		fmt.Fprintf(&b, "; %s alone", names[0])
	}
	return b.String()
}
