package vespatest

import "testing"

func TestParseYQL(t *testing.T) {
	for _, tc := range []struct {
		yql string
		ok  bool
	}{
		{"select * from chunk_a where userQuery()", true},
		{"select * from chunk_a where true", true},
		{"select * from chunk_a where ({targetHits:5}nearestNeighbor(embedding, q)) and date >= -1 and date <= 9", true},
		{`select * from chunk_a where userQuery() and metadata contains sameElement(key contains "k\"", value contains "a and b")`, true},
		{"select * from sources * where userQuery()", false},
		{"select * from chunk_a where userQuery() or true", false},
		{`select * from chunk_a where title contains "x"`, false},
		{`select * from chunk_a where userQuery() and metadata contains sameElement(key contains "k", value contains "v)`, false},
		{"select * from chunk_a where userQuery() and ({targetHits:5}nearestNeighbor(embedding, q))", false},
	} {
		t.Run(tc.yql, func(t *testing.T) {
			p, err := parseYQL(tc.yql)
			if (err == nil) != tc.ok {
				t.Fatalf("parseYQL error = %v, want ok=%v", err, tc.ok)
			}
			if err == nil && p.doctype != "chunk_a" {
				t.Errorf("doctype %q", p.doctype)
			}
		})
	}
	p, err := parseYQL(`select * from chunk_a where true and metadata contains sameElement(key contains "k\"", value contains "a\\ and b")`)
	if err != nil || len(p.meta) != 1 || p.meta[0] != [2]string{`k"`, `a\ and b`} {
		t.Errorf("metadata %q, %v; want one unescaped pair", p.meta, err)
	}
}
