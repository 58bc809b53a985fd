package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval/eval"
	"github.com/agentbus/agentbus/retrieval/vespa/vespatest"
)

func TestEvalCommand(t *testing.T) {
	fake := vespatest.New(t)
	data, docs, labels := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, docs, sampleDocs)
	backend := []string{"--data", data, "--tenant", "acme", "--search-backend", "vespa", "--vespa-url", fake.URL}
	if code, out, errs := searchCLI(t, append(append([]string{"index"}, backend...), docs)...); code != exitFailed {
		t.Fatalf("index: exit %d\n%s%s", code, out, errs)
	}
	writeFiles(t, labels, map[string]string{
		"queries.jsonl": `{"_id":"h","text":"sha256 checksum"}` + "\n" + `{"_id":"u","text":"url query string"}` + "\n" +
			`{"_id":"x","text":"nothing judged"}` + "\n",
		"qrels.tsv": "query-id\tcorpus-id\tscore\nh\tguides/hashing.md\t2\nu\turls\t2\nu\tguides/csv.txt\t1\n",
		"bad.tsv":   "query-id\tcorpus-id\tscore\nh\tguides/hashing.md\n",
	})
	q, r := filepath.Join(labels, "queries.jsonl"), filepath.Join(labels, "qrels.tsv")

	code, out, errs := searchCLI(t, append([]string{"eval", "--queries", q, "--qrels", r, "--k", "3"}, backend...)...)
	if code != exitCompleted {
		t.Fatalf("eval: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"2 queries, k=3, tenant acme", "NDCG@3", "bm25", "vector", "rrf", "not scored (no relevant judgement): x"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	code, out, errs = searchCLI(t, append([]string{"eval", "--queries", q, "--qrels", r, "--k", "3", "--json"}, backend...)...)
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); code != exitCompleted || err != nil {
		t.Fatalf("eval --json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	if len(rep.Runs) != 4 || rep.Runs[2].Name != eval.RRF || rep.Runs[3].Name != eval.RRFRerank || rep.Reranker != "deterministic" {
		t.Fatalf("runs %+v, reranker %q: want bm25, vector, rrf, rrf+rerank by deterministic", rep.Runs, rep.Reranker)
	}
	// Each query names its document in distinctive words: BM25 ranks it
	// first, so the query's MRR is 1 and the hashing query's NDCG is 1.
	bm25 := rep.Runs[0]
	if bm25.Name != "bm25" || bm25.MRR != 1 || bm25.Queries[0].ID != "h" || bm25.Queries[0].NDCG != 1 || bm25.Queries[0].Docs[0] != "guides/hashing.md" {
		t.Errorf("bm25 run %+v: want MRR 1 and guides/hashing.md first for h", bm25)
	}

	bad := filepath.Join(labels, "bad.tsv")
	code, _, errs = searchCLI(t, append([]string{"eval", "--queries", q, "--qrels", bad}, backend...)...)
	if code != exitUsage || !strings.Contains(errs, filepath.ToSlash(bad)+":2: 2 fields") {
		t.Errorf("bad qrels: exit %d, stderr %q: want %d naming %s:2", code, errs, exitUsage, bad)
	}
	code, _, errs = searchCLI(t, append([]string{"eval", "--queries", q}, backend...)...)
	if code != exitUsage || !strings.Contains(errs, "give both --queries and --qrels") {
		t.Errorf("--queries alone: exit %d, stderr %q", code, errs)
	}
}

// TestEvalShippedLabels runs eval with no label files on a tenant that
// already has documents: the shipped queries are scored against them
// and the shipped corpus is not indexed.
func TestEvalShippedLabels(t *testing.T) {
	fake := vespatest.New(t)
	data, docs := t.TempDir(), t.TempDir()
	writeFiles(t, docs, map[string]string{"a.md": "Compute a SHA-256 checksum."})
	backend := []string{"--data", data, "--search-backend", "vespa", "--vespa-url", fake.URL}
	if code, out, errs := searchCLI(t, append(append([]string{"index"}, backend...), docs)...); code != exitCompleted {
		t.Fatalf("index: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := searchCLI(t, append([]string{"eval", "--json"}, backend...)...)
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); code != exitCompleted || err != nil {
		t.Fatalf("eval: exit %d, %v\n%s%s", code, err, out, errs)
	}
	if strings.Contains(errs, "indexing the shipped corpus") || rep.Queries != 60 || rep.Tenant != "default" || len(rep.Runs) != 4 {
		t.Fatalf("report for %d queries, tenant %q, %d runs; stderr %q", rep.Queries, rep.Tenant, len(rep.Runs), errs)
	}
	for _, run := range rep.Runs {
		if run.MRR != 0 || run.NDCG != 0 { // a.md is relevant to nothing
			t.Errorf("%s: NDCG %.3f MRR %.3f, want 0", run.Name, run.NDCG, run.MRR)
		}
	}
	code, out, errs = searchCLI(t, append([]string{"eval", "--json", "--set", "realistic", "--raw"}, backend...)...)
	rep = eval.Report{}
	if err := json.Unmarshal([]byte(out), &rep); code != exitCompleted || err != nil || rep.Queries != 76 || rep.Understood {
		t.Fatalf("eval --set realistic --raw: exit %d, %v, %d queries, understood %v\n%s%s", code, err, rep.Queries, rep.Understood, out, errs)
	}
	for _, bad := range [][]string{{"--set", "nope"}, {"--rerank", "llm"}, {"--rerank", "magic"}, {"--vector-model", "magic"},
		{"--set", "shipped", "--queries", "q", "--qrels", "r"}} {
		if code, _, errs := searchCLI(t, append(append([]string{"eval"}, bad...), backend...)...); code != exitUsage {
			t.Errorf("eval %v: exit %d, stderr %q: want %d", bad, code, errs, exitUsage)
		}
	}
}

// TestIndexAndEvalEmbedded runs both commands on the default backend:
// the embedded index under --data.
func TestIndexAndEvalEmbedded(t *testing.T) {
	data, docs, labels := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, docs, sampleDocs)
	code, out, errs := searchCLI(t, "index", "--data", data, docs)
	if code != exitFailed || !strings.Contains(out, "indexed 4 documents (4 chunks) from 3 files into tenant default") ||
		!strings.Contains(out, "backend: embedded") {
		t.Fatalf("index: exit %d\n%s%s", code, out, errs)
	}
	writeFiles(t, labels, map[string]string{
		"queries.jsonl": `{"_id":"z","text":"gzip stream"}` + "\n" + `{"_id":"c","text":"comma separated values"}` + "\n",
		"qrels.tsv":     "z\tgzip\t2\nc\tguides/csv.txt\t2\n",
	})
	code, out, errs = searchCLI(t, "eval", "--data", data, "--json", "--queries", filepath.Join(labels, "queries.jsonl"), "--qrels", filepath.Join(labels, "qrels.tsv"))
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); code != exitCompleted || err != nil {
		t.Fatalf("eval: exit %d, %v\n%s%s", code, err, out, errs)
	}
	if len(rep.Runs) != 4 || rep.Runs[0].Name != "bm25" || rep.Runs[0].MRR != 1 || rep.Runs[2].MRR != 1 || rep.Runs[3].MRR != 1 {
		t.Errorf("runs %+v: want bm25, rrf and rrf+rerank to put each answer first", rep.Runs)
	}
}

// TestEvalShippedCorpus runs eval with no label files on an empty
// tenant: the shipped corpus is indexed first, then its 60 queries are
// scored. The floors are far below what it measures (README) and far
// above chance (1 relevant document in 176).
func TestEvalShippedCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes the whole sample corpus")
	}
	code, out, errs := searchCLI(t, "eval", "--json", "--data", t.TempDir())
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); code != exitCompleted || err != nil {
		t.Fatalf("eval: exit %d, %v\n%s%s", code, err, out, errs)
	}
	if !strings.Contains(errs, "indexing the shipped corpus") || rep.Queries != 60 || rep.Tenant != "default" || len(rep.Runs) != 4 {
		t.Fatalf("report for %d queries, tenant %q; stderr %q", rep.Queries, rep.Tenant, errs)
	}
	if bm25 := rep.Runs[0]; bm25.Name != "bm25" || bm25.NDCG < 0.6 || bm25.MRR < 0.6 {
		t.Errorf("bm25: NDCG %.3f MRR %.3f, want both ≥ 0.6", bm25.NDCG, bm25.MRR)
	}
	if rrf := rep.Runs[2]; rrf.NDCG < 0.5 || rrf.Recall < 0.6 {
		t.Errorf("rrf: NDCG %.3f recall %.3f, want ≥ 0.5 and ≥ 0.6", rrf.NDCG, rrf.Recall)
	}
}

// TestEvalEmptyIndex: labelled queries against an empty tenant index are
// refused (exit 3) naming the tenant and where the index is, instead of a
// table of zeros; the sample corpus is not indexed for them.
func TestEvalEmptyIndex(t *testing.T) {
	fake := vespatest.New(t)
	labels := t.TempDir()
	writeFiles(t, labels, map[string]string{
		"queries.jsonl": `{"_id":"h","text":"sha256 checksum"}` + "\n",
		"qrels.tsv":     "h\tguides/hashing.md\t2\n",
	})
	q, r := filepath.Join(labels, "queries.jsonl"), filepath.Join(labels, "qrels.tsv")
	embeddedData, vespaData := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		name  string
		args  []string
		where string
	}{
		{"embedded", []string{"--data", embeddedData, "--tenant", "acme"}, "(data directory " + embeddedData + ")"},
		{"vespa", []string{"--data", vespaData, "--tenant", "acme", "--search-backend", "vespa", "--vespa-url", fake.URL}, "(Vespa at " + fake.URL + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := searchCLI(t, append([]string{"eval", "--queries", q, "--qrels", r}, tc.args...)...)
			want := "agentbus: the search index of tenant acme is empty " + tc.where + ": nothing to evaluate; index the documents first (agentbus index "
			if code != exitUsage || !strings.Contains(errs, want) || out != "" || strings.Contains(errs, "shipped corpus") {
				t.Fatalf("exit %d, stdout %q, stderr %q: want %d and %q", code, out, errs, exitUsage, want)
			}
		})
	}
}
