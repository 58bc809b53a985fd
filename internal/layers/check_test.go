package main

import (
	"slices"
	"testing"
)

// testTable is a small ladder: "leaf" and "tree/..." at 0, "mid" at 1,
// "top" and "tree/top" at 2.
var testTable = []layer{
	{role: "leaves", patterns: []string{"leaf", "tree/...", "other/..."}},
	{role: "middle", patterns: []string{"mid"}},
	{role: "top", patterns: []string{"top", "tree/top", "."}},
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pkgs       []pkg
		allow      []edge
		ok         bool
		violations []string
		known      int
		stale      []edge
		unplaced   []string
		cycles     []string
	}{
		{
			name: "downward and sideways only",
			pkgs: []pkg{{"leaf", nil}, {"tree/a", []string{"leaf"}}, {"mid", []string{"tree/a", "leaf"}}, {"top", []string{"mid"}}, {".", []string{"top"}}},
			ok:   true,
		},
		{
			name:       "an upward import",
			pkgs:       []pkg{{"leaf", []string{"mid"}}, {"mid", nil}},
			violations: []string{"m/leaf imports higher-layer m/mid (layer 0 → 1)"},
		},
		{
			name:  "an allowlisted upward import",
			pkgs:  []pkg{{"leaf", []string{"mid"}}, {"mid", nil}},
			allow: []edge{{"leaf", "mid"}},
			ok:    true,
			known: 1,
		},
		{
			name:  "an allowlist entry that no longer occurs",
			pkgs:  []pkg{{"leaf", nil}, {"mid", []string{"leaf"}}},
			allow: []edge{{"leaf", "mid"}, {"mid", "leaf"}},
			stale: []edge{{"leaf", "mid"}, {"mid", "leaf"}},
		},
		{
			name:     "a package with no layer",
			pkgs:     []pkg{{"leaf", nil}, {"stray/x", []string{"leaf"}}},
			unplaced: []string{"stray/x"},
		},
		{
			name:   "a cycle between groups of one layer",
			pkgs:   []pkg{{"tree/a", []string{"leaf"}}, {"leaf", []string{"other/b"}}, {"other/b", []string{"tree/c"}}, {"tree/c", nil}},
			cycles: []string{"leaf → other/... → tree/... → leaf (leaf imports other/b; other/b imports tree/c; tree/a imports leaf)"},
		},
		{
			name: "imports within a group are no cycle",
			pkgs: []pkg{{"tree/a", []string{"tree/b"}}, {"tree/b", []string{"tree/c"}}, {"tree/c", nil}},
			ok:   true,
		},
		{
			name:       "the exact pattern wins over the tree",
			pkgs:       []pkg{{"tree/top", nil}, {"tree/a", []string{"tree/top"}}},
			violations: []string{"m/tree/a imports higher-layer m/tree/top (layer 0 → 2)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := check(tc.pkgs, testTable, tc.allow)
			var violations []string
			for _, v := range r.violations {
				violations = append(violations, v.String("m"))
			}
			if r.ok() != tc.ok {
				t.Errorf("ok() = %v, want %v (%+v)", r.ok(), tc.ok, r)
			}
			if !slices.Equal(violations, tc.violations) {
				t.Errorf("violations = %q, want %q", violations, tc.violations)
			}
			if len(r.known) != tc.known {
				t.Errorf("known = %v, want %d", r.known, tc.known)
			}
			if !slices.Equal(r.stale, tc.stale) {
				t.Errorf("stale = %v, want %v", r.stale, tc.stale)
			}
			if !slices.Equal(r.unplaced, tc.unplaced) {
				t.Errorf("unplaced = %q, want %q", r.unplaced, tc.unplaced)
			}
			if !slices.Equal(r.cycles, tc.cycles) {
				t.Errorf("cycles = %q, want %q", r.cycles, tc.cycles)
			}
		})
	}
}

func TestPlace(t *testing.T) {
	table := []layer{{patterns: []string{"a/..."}}, {patterns: []string{"a/b/..."}}, {patterns: []string{"a/b/c", "."}}}
	for path, want := range map[string]int{"a": 0, "a/x": 0, "a/b": 1, "a/b/d": 1, "a/b/c": 2, "a/b/c/d": 1, ".": 2, "ab": -1} {
		pl, ok := place(table, path)
		if got := map[bool]int{true: pl.layer, false: -1}[ok]; got != want {
			t.Errorf("place(%q) = layer %d, want %d", path, got, want)
		}
	}
}

// TestTable keeps the real table sound: every layer says its role and no
// pattern appears twice.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for i, l := range layers {
		if l.role == "" || len(l.patterns) == 0 {
			t.Errorf("layer %d needs a role and patterns", i)
		}
		for _, p := range l.patterns {
			if seen[p] {
				t.Errorf("pattern %q appears twice", p)
			}
			seen[p] = true
		}
	}
	for _, e := range allowed {
		if _, ok := place(layers, e.from); !ok {
			t.Errorf("allowlisted %v: %s has no layer", e, e.from)
		}
	}
}

func TestPathTo(t *testing.T) {
	imports := map[string][]string{"a": {"b", "c"}, "b": {"d"}, "c": {"x/server"}, "d": {"x/server"}}
	isServer := func(p string) bool { return p == "x/server" }
	if got, want := pathTo("a", imports, isServer), []string{"a", "c", "x/server"}; !slices.Equal(got, want) {
		t.Errorf("pathTo = %q, want %q", got, want)
	}
	if got := pathTo("b", map[string][]string{"b": {"d"}}, isServer); got != nil {
		t.Errorf("pathTo with no server = %q, want nil", got)
	}
}
