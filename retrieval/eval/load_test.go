package eval_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval/eval"
)

func TestReadQueries(t *testing.T) {
	tests := []struct {
		name, in, err string
		n             int
	}{
		{"beir", `{"_id":"q1","text":"a","metadata":{}}` + "\n\n" + `{"_id":"q2","text":"b","title":""}`, "", 2},
		{"not json", `{"_id":"q1","text":"a"}` + "\n{nope", "q.jsonl:2: not a JSON object", 0},
		{"no id", `{"text":"a"}`, `q.jsonl:1: "_id" is missing`, 0},
		{"no text", `{"_id":"q1","text":" "}`, `q.jsonl:1: "text" is missing`, 0},
		{"duplicate", `{"_id":"q1","text":"a"}` + "\n" + `{"_id":"q1","text":"b"}`, `q.jsonl:2: query "q1" already defined at line 1`, 0},
		{"empty", "\n", "q.jsonl: no queries", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qs, err := eval.ReadQueries(strings.NewReader(tt.in), "q.jsonl")
			if tt.err == "" {
				if err != nil || len(qs) != tt.n {
					t.Fatalf("ReadQueries = %v, %v: want %d queries", qs, err, tt.n)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, eval.ErrFormat) {
				t.Fatalf("ReadQueries error = %v, want one containing %q and matching ErrFormat", err, tt.err)
			}
		})
	}
}

func TestReadQrels(t *testing.T) {
	tests := []struct {
		name, in, err string
		want          eval.Qrels
	}{
		{"beir", "query-id\tcorpus-id\tscore\nq1\tgo/a\t2\nq1\tgo/b\t1\nq2\tgo/c\t0\n", "",
			eval.Qrels{"q1": {"go/a": 2, "go/b": 1}, "q2": {"go/c": 0}}},
		{"no header", "q1\td 1\t1\n", "", eval.Qrels{"q1": {"d 1": 1}}},
		{"trec", "q1 0 d1 2\nq1 0 d2 1\n", "", eval.Qrels{"q1": {"d1": 2, "d2": 1}}},
		{"bad score", "query-id\tcorpus-id\tscore\nq1\td\thigh\n", "qrels.tsv:2: score \"high\"", nil},
		{"negative", "q1\td\t-1\n", "qrels.tsv:1: score \"-1\"", nil},
		{"fields", "query-id\tcorpus-id\tscore\nq1\td\n", "qrels.tsv:2: 2 fields", nil},
		{"twice", "q1\td\t1\nq1\td\t2\n", "qrels.tsv:2: q1 d judged twice", nil},
		{"empty id", "q1\t\t1\n", "qrels.tsv:1: empty query-id or corpus-id", nil},
		{"header only", "query-id\tcorpus-id\tscore\n", "qrels.tsv: no judgements", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := eval.ReadQrels(strings.NewReader(tt.in), "qrels.tsv")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, eval.ErrFormat) {
					t.Fatalf("ReadQrels error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("ReadQrels = %v, %v, want %v", got, err, tt.want)
			}
			for q, js := range tt.want {
				for d, g := range js {
					if s, ok := got[q][d]; !ok || s != g {
						t.Errorf("%s %s = %d (%v), want %d", q, d, s, ok, g)
					}
				}
			}
		})
	}
}

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	q := filepath.Join(dir, "queries.jsonl")
	r := filepath.Join(dir, "qrels.tsv")
	if err := os.WriteFile(q, []byte(`{"_id":"q1","text":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r, []byte("q1\td\tx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if qs, err := eval.LoadQueries(q); err != nil || len(qs) != 1 {
		t.Fatalf("LoadQueries = %v, %v", qs, err)
	}
	var le *eval.LineError
	if _, err := eval.LoadQrels(r); !errors.As(err, &le) || le.File != r || le.Line != 1 {
		t.Fatalf("LoadQrels = %v, want a LineError at %s:1", err, r)
	}
	if _, err := eval.LoadQueries(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("LoadQueries of a missing file succeeded")
	}
}
