package compose

import (
	"slices"
	"strings"
)

// focusBonus lifts, in the ranking of sentences, a sentence from the
// documentation of a package the query names an identifier of.
const focusBonus = 0.25

// pkgSymbol splits a qualified identifier: "sync.RWMutex" is package
// "sync", symbol "RWMutex"; "http.Client.Do" is "http", "Client.Do". An
// unqualified identifier has no package.
func pkgSymbol(ident string) (pkg, symbol string) {
	if i := strings.IndexByte(ident, '.'); i > 0 && i < len(ident)-1 && strings.ToLower(ident[:i]) == ident[:i] {
		return ident[:i], ident[i+1:]
	}
	return "", ident
}

// focusPackages are the packages the query's qualified identifiers name.
func (c *composition) focusPackages() []string {
	var out []string
	for _, id := range c.understood.Identifiers {
		if p, _ := pkgSymbol(id); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// inPackage reports whether a hit is the documentation of package pkg:
// its document's last path element is pkg ("go/sync", "go/net/http" for
// http), or its title names the package ("package sync (sync) › …").
func inPackage(h hit, pkg string) bool {
	doc := h.DocID
	if i := strings.LastIndexByte(doc, '/'); i >= 0 {
		doc = doc[i+1:]
	}
	return doc == pkg || strings.HasPrefix(h.Title, "package "+pkg+" ")
}

// focused reports whether a hit documents a package the query names.
func (c *composition) focused(h hit) bool {
	for _, p := range c.focusPackages() {
		if inPackage(h, p) {
			return true
		}
	}
	return false
}

// onlyIdentifiers reports whether the query searches for its identifiers
// and nothing else ("compare sync.Mutex and sync.RWMutex in detail"): it
// is about those types, so passages that merely mention them elsewhere
// (a profiler's docs naming sync.Mutex) are beside the point.
func (c *composition) onlyIdentifiers() bool {
	if len(c.focusPackages()) == 0 {
		return false
	}
	rest := c.understood.Search
	for _, id := range c.understood.Identifiers {
		rest = strings.ReplaceAll(rest, id, " ")
	}
	return strings.TrimSpace(strings.Trim(rest, " ,;:&/")) == "" ||
		len(terms(rest)) == 0
}

// answerable returns the indexes of the found hits the answer draws its
// sentences from: all of them, except that a query only about some
// packages' identifiers draws from those packages' documentation when
// search found any.
func (c *composition) answerable() map[int]bool {
	out := map[int]bool{}
	only := c.onlyIdentifiers()
	for i := range c.found {
		if !only || c.focused(c.hits[i]) {
			out[i] = true
		}
	}
	if len(out) == 0 {
		for i := range c.found {
			out[i] = true
		}
	}
	return out
}

// lift adds focusBonus to the sentences from the named packages' docs,
// and as much again to a sentence that defines a symbol ("A Mutex is …",
// "RWMutex is …").
func (c *composition) lift(cands []sentence, symbols []string) {
	for i := range cands {
		s := &cands[i]
		if c.focused(c.hits[s.hit]) {
			s.score += focusBonus
		}
		for _, sym := range symbols {
			for _, lead := range []string{sym + " ", "A " + sym + " ", "An " + sym + " ", "The " + sym + " "} {
				if strings.HasPrefix(s.text, lead) {
					s.score += focusBonus
				}
			}
		}
	}
}

// symbols are the symbols of the query's identifiers ("Mutex", "RWMutex").
func (c *composition) symbols() []string {
	var out []string
	for _, id := range c.understood.Identifiers {
		_, sym := pkgSymbol(id)
		out = append(out, sym)
	}
	return out
}
