package compose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/querykind"
)

// sentencesPerSide is how many sentences a comparison gives each side.
const sentencesPerSide = 2

// side is one side of a comparison as the search step found it: its name
// ("sync.RWMutex") and the chunk ids found for it, best first.
type side struct {
	Name string   `json:"name"`
	Hits []string `json:"hits"`
}

// comparison is a query that compares things, and what search found for
// each: the composer writes a side-by-side section for it.
type comparison struct {
	sides []side
}

// comparisonOf is the comparison a query asks for, if any: the sides
// query understanding found, with the hits search found for each side of
// the same name. Nil when the query compares nothing.
func comparisonOf(u querykind.Understanding, found []side) *comparison {
	if u.Intent != querykind.IntentCompare || len(u.Sides) < 2 {
		return nil
	}
	cmp := &comparison{}
	for _, name := range u.Sides {
		sd := side{Name: name}
		for _, f := range found {
			if strings.EqualFold(f.Name, name) {
				sd.Hits = f.Hits
			}
		}
		cmp.sides = append(cmp.sides, sd)
	}
	return cmp
}

// sideTerms are the terms that name a side: its words, and for an
// identifier such as "sync.RWMutex" its symbol alone ("rwmutex"), which is
// how the documentation mentions it.
func sideTerms(name string) (all, symbol []string) {
	all = terms(name)
	if i := strings.LastIndexByte(name, '.'); i >= 0 && i < len(name)-1 {
		symbol = terms(name[i+1:])
	} else {
		symbol = all
	}
	return all, symbol
}

// sideBySide picks, for each side, the sentences that speak of it: from
// the hits found for that side (all hits when search did not say),
// sentences that name the side's symbol, ranked against the side's terms
// and the query's. A sentence serves one side only.
func (c *composition) sideBySide(cmp comparison, queryTerms []string) [][]sentence {
	out := make([][]sentence, len(cmp.sides))
	used := map[string]bool{}
	from := c.answerable()
	for i, sd := range cmp.sides {
		pkg, sym := pkgSymbol(sd.Name)
		allowed := map[int]bool{}
		for h := range c.found {
			hit := c.hits[h]
			// the hits search found for the side, and any passage of the
			// side's own documentation ("… › type RWMutex")
			own := pkg != "" && inPackage(hit, pkg) && strings.Contains(hit.Title, " "+sym)
			if from[h] && (len(sd.Hits) == 0 || slices.Contains(sd.Hits, hit.ID) || own) {
				allowed[h] = true
			}
		}
		// a side's own package's documentation, when search found it
		if pkg != "" {
			own := map[int]bool{}
			for h := range allowed {
				if inPackage(c.hits[h], pkg) {
					own[h] = true
				}
			}
			if len(own) > 0 {
				allowed = own
			}
		}
		all, symbol := sideTerms(sd.Name)
		cands := slices.DeleteFunc(sentences(c.hits), func(s sentence) bool {
			if !allowed[s.hit] || used[s.text] {
				return true
			}
			for _, t := range symbol {
				if !s.set[t] {
					return true
				}
			}
			return false
		})
		score(cands, append(slices.Clone(all), queryTerms...))
		c.lift(cands, []string{sym})
		for _, s := range pick(cands, sentencesPerSide) {
			used[s.text] = true
			out[i] = append(out[i], s)
		}
		// in reading order: a passage's definition opens it
		slices.SortStableFunc(out[i], byHitOrder)
	}
	return out
}

// renderComparison writes the side-by-side section: "## A vs B", then a
// subsection per side with its cited sentences (a summary gets one
// paragraph per side instead). A side nothing was found for says so.
func (c *composition) renderComparison(cmp comparison, per [][]sentence) string {
	names := make([]string, len(cmp.sides))
	for i, s := range cmp.sides {
		names[i] = s.Name
	}
	var b strings.Builder
	if c.report {
		fmt.Fprintf(&b, "## %s\n\n", strings.Join(names, " vs "))
	}
	for i, sd := range cmp.sides {
		if c.report {
			fmt.Fprintf(&b, "### %s\n\n", sd.Name)
			if len(per[i]) == 0 {
				fmt.Fprintf(&b, "- The documents found say nothing specific about %s.\n", sd.Name)
			}
			for _, s := range per[i] {
				b.WriteString("- " + c.cited(s) + "\n")
			}
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(&b, "**%s**: ", sd.Name)
		if len(per[i]) == 0 {
			b.WriteString("the documents found say nothing specific about it.")
		}
		for j, s := range per[i] {
			if j > 0 {
				b.WriteString(" ")
			}
			b.WriteString(c.cited(s))
		}
		b.WriteString("\n\n")
	}
	return b.String()
}
