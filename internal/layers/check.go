package main

import (
	"fmt"
	"slices"
	"strings"
)

// edge is one package importing another, both as paths relative to the
// module ("." for the root package).
type edge struct{ from, to string }

// pkg is one package of the module with the module's packages its
// non-test files import, all module-relative.
type pkg struct {
	path    string
	imports []string
}

// placement is where the table puts a package: the index of its layer and
// the pattern that matched it, which names its group.
type placement struct {
	layer int
	group string
}

// violation is an import of a package of a higher layer.
type violation struct {
	edge
	fromLayer, toLayer int
}

// String is the line the program prints for v; module is the module path,
// which turns v's relative paths back into import paths.
func (v violation) String(module string) string {
	return fmt.Sprintf("%s imports higher-layer %s (layer %d → %d)", importPath(module, v.from), importPath(module, v.to), v.fromLayer, v.toLayer)
}

// result is what check found.
type result struct {
	packages int // packages placed in a layer
	groups   int // patterns that matched a package
	imports  int // imports between two placed packages
	layers   int

	violations []violation // upward imports not in the allowlist
	known      []violation // upward imports in the allowlist
	stale      []edge      // allowlist entries that are not (or no longer) an upward import
	unplaced   []string    // packages no pattern matches
	cycles     []string    // cycles between groups, as "a → b → a (a/x imports b; …)"
}

// ok reports whether the check passed.
func (r result) ok() bool {
	return len(r.violations)+len(r.stale)+len(r.unplaced)+len(r.cycles) == 0
}

// check places every package in table and returns the upward imports and
// the cycles between groups. Allowlisted imports count as known violations
// and are left out of the cycle search. pkgs' imports name only the
// module's packages.
func check(pkgs []pkg, table []layer, allow []edge, apart ...string) result {
	r := result{layers: len(table)}
	at := map[string]placement{}
	groups := map[string]bool{}
	for _, p := range pkgs {
		pl, ok := place(table, p.path)
		if !ok {
			r.unplaced = append(r.unplaced, p.path)
			continue
		}
		at[p.path] = pl
		groups[pl.group] = true
	}
	r.packages, r.groups = len(at), len(groups)

	allowed := map[edge]bool{}
	for _, e := range allow {
		allowed[e] = true
	}
	seen := map[edge]bool{}
	// Between groups: the first package import that ties them, as a witness.
	between := map[edge]edge{}
	for _, p := range pkgs {
		from, ok := at[p.path]
		if !ok {
			continue
		}
		for _, imp := range p.imports {
			to, ok := at[imp]
			if !ok {
				continue
			}
			r.imports++
			e := edge{p.path, imp}
			if to.layer > from.layer || from.group != to.group && slices.Contains(apart, from.group) && slices.Contains(apart, to.group) {
				v := violation{e, from.layer, to.layer}
				if allowed[e] {
					seen[e] = true
					r.known = append(r.known, v)
					continue
				}
				r.violations = append(r.violations, v)
			}
			if g := (edge{from.group, to.group}); g.from != g.to {
				if w, ok := between[g]; !ok || less(e, w) {
					between[g] = e
				}
			}
		}
	}
	for _, e := range allow {
		if !seen[e] {
			r.stale = append(r.stale, e)
		}
	}
	r.cycles = groupCycles(between)
	slices.Sort(r.unplaced)
	byEdge := func(a, b violation) int { return strings.Compare(a.from+"\x00"+a.to, b.from+"\x00"+b.to) }
	slices.SortFunc(r.violations, byEdge)
	slices.SortFunc(r.known, byEdge)
	return r
}

func less(a, b edge) bool { return a.from < b.from || a.from == b.from && a.to < b.to }

// place returns the layer and group of path: an exact pattern wins over a
// tree, a longer tree over a shorter one. It reports false when no pattern
// matches.
func place(table []layer, path string) (placement, bool) {
	best, bestLen := placement{}, -1
	for i, l := range table {
		for _, pat := range l.patterns {
			if n := matchLen(pat, path); n > bestLen {
				best, bestLen = placement{i, pat}, n
			}
		}
	}
	return best, bestLen >= 0
}

// matchLen says how closely pat matches path: -1 not at all, the length of
// a tree's base for "base/...", more than any base for an exact match.
func matchLen(pat, path string) int {
	if pat == path {
		return 1 << 30
	}
	if base, ok := strings.CutSuffix(pat, "/..."); ok && (path == base || strings.HasPrefix(path, base+"/")) {
		return len(base)
	}
	return -1
}

// groupCycles returns one cycle through each strongly connected set of
// groups (Tarjan), with the package imports that close it.
func groupCycles(between map[edge]edge) []string {
	next := map[string][]string{}
	var nodes []string
	for g := range between {
		if next[g.from] == nil {
			nodes = append(nodes, g.from)
		}
		next[g.from] = append(next[g.from], g.to)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		slices.Sort(next[n])
	}

	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out []string
	var visit func(string)
	visit = func(n string) {
		index[n], low[n] = len(index), len(index)
		stack = append(stack, n)
		onStack[n] = true
		for _, m := range next[n] {
			if _, ok := index[m]; !ok {
				visit(m)
				low[n] = min(low[n], low[m])
			} else if onStack[m] {
				low[n] = min(low[n], index[m])
			}
		}
		if low[n] != index[n] {
			return
		}
		var scc []string
		for {
			m := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[m] = false
			scc = append(scc, m)
			if m == n {
				break
			}
		}
		if len(scc) > 1 {
			out = append(out, describeCycle(cycleIn(scc, next), between))
		}
	}
	for _, n := range nodes {
		if _, ok := index[n]; !ok {
			visit(n)
		}
	}
	slices.Sort(out)
	return out
}

// cycleIn returns a shortest cycle through the smallest group of scc, a
// strongly connected set, as its groups in order, the first repeated last.
func cycleIn(scc []string, next map[string][]string) []string {
	in := map[string]bool{}
	for _, n := range scc {
		in[n] = true
	}
	start := slices.Min(scc)
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range next[n] {
			if !in[m] {
				continue
			}
			if m == start {
				path := []string{start}
				for x := n; x != start; x = prev[x] {
					path = append(path, x)
				}
				path = append(path, start)
				slices.Reverse(path)
				return path
			}
			if _, ok := prev[m]; !ok {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil // not reached: scc is strongly connected
}

func describeCycle(path []string, between map[edge]edge) string {
	var why []string
	for i := 1; i < len(path); i++ {
		w := between[edge{path[i-1], path[i]}]
		why = append(why, w.from+" imports "+w.to)
	}
	return strings.Join(path, " → ") + " (" + strings.Join(why, "; ") + ")"
}

// importPath turns a module-relative path back into an import path.
func importPath(module, rel string) string {
	if rel == "." {
		return module
	}
	return module + "/" + rel
}

// relPath is importPath's inverse; it reports false for a path outside
// the module.
func relPath(module, path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}
