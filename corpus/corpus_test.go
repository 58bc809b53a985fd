package corpus_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/corpus"
	"github.com/agentbus/agentbus/schemas"
)

func lines(t *testing.T, r io.Reader) []string {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	var out []string
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func documents(t *testing.T) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	size := 0
	for i, line := range lines(t, corpus.Documents()) {
		size += len(line) + 1
		if err := schemas.Validate("index.record", []byte(line)); err != nil {
			t.Fatalf("%s:%d: %v", corpus.DocumentsName, i+1, err)
		}
		var rec struct {
			ID       string            `json:"id"`
			Title    string            `json:"title"`
			Metadata map[string]string `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		ip := strings.TrimPrefix(rec.ID, "go/")
		if ids[rec.ID] || rec.Metadata["import_path"] != ip || !strings.HasSuffix(rec.Title, "("+ip+")") ||
			rec.Metadata["license"] != "BSD-3-Clause" || rec.Metadata["source"] != "Go standard library documentation" {
			t.Errorf("%s:%d: %q: duplicate, or title/metadata do not match the id: %+v", corpus.DocumentsName, i+1, rec.ID, rec)
		}
		for _, skip := range []string{"internal", "vendor", "cmd", "testdata"} {
			if strings.HasPrefix(ip, skip+"/") || strings.Contains(ip, "/"+skip) {
				t.Errorf("%s:%d: %q should have been left out", corpus.DocumentsName, i+1, rec.ID)
			}
		}
		ids[rec.ID] = true
	}
	if len(ids) < 150 || size > 3<<20 {
		t.Errorf("%d documents, %d bytes: want at least 150 documents in at most 3 MiB", len(ids), size)
	}
	return ids
}

func TestQueriesAndQrels(t *testing.T) {
	docs := documents(t)
	for _, set := range corpus.Sets() {
		t.Run(set.Name, func(t *testing.T) { checkSet(t, set, docs) })
	}
	if s, ok := corpus.LabelledSet(corpus.SetShipped); !ok || s.QueriesName != corpus.QueriesName {
		t.Fatalf("LabelledSet(shipped) = %+v, %v", s, ok)
	}
}

func checkSet(t *testing.T, set corpus.Set, docs map[string]bool) {
	queries := map[string]bool{}
	for i, line := range lines(t, set.Queries()) {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &q); err != nil || q.ID == "" || q.Text == "" || queries[q.ID] {
			t.Errorf("%s:%d: %q: want a unique _id and text (%v)", set.QueriesName, i+1, line, err)
		}
		queries[q.ID] = true
	}
	if len(queries) < 60 {
		t.Errorf("%d queries, want at least 60", len(queries))
	}
	answered := map[string]bool{}
	ls := lines(t, set.Qrels())
	if len(ls) == 0 || ls[0] != "query-id\tcorpus-id\tscore" {
		t.Fatalf("%s: first line %q, want the BEIR header", set.QrelsName, ls[0])
	}
	seen := map[string]bool{}
	for i, line := range ls[1:] {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Errorf("%s:%d: %q: want 3 tab-separated fields", set.QrelsName, i+2, line)
			continue
		}
		score, err := strconv.Atoi(f[2])
		if !queries[f[0]] || !docs[f[1]] || err != nil || score < 1 || score > 2 || seen[f[0]+" "+f[1]] {
			t.Errorf("%s:%d: %q: want a known query, a known document, score 1 or 2, once", set.QrelsName, i+2, line)
		}
		seen[f[0]+" "+f[1]] = true
		if score == 2 {
			answered[f[0]] = true
		}
	}
	for q := range queries {
		if !answered[q] {
			t.Errorf("query %s has no document of score 2", q)
		}
	}
}
