// Package corpus is agentbus's sample corpus, embedded in the binary so
// that `agentbus serve` can answer real queries on first start with no
// files on disk: the Go standard library's package documentation, one
// JSONL document per package (godoc.jsonl, ids "go/<import path>", in
// the "index.record" schema), and labelled queries for it in BEIR format
// (queries.jsonl and qrels.tsv) that `agentbus eval` scores retrieval
// with. See README.md for where the text comes from, its licence and how
// to regenerate it.
package corpus
