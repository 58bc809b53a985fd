package corpus

import (
	"bytes"
	_ "embed"
	"io"
)

// Names of the embedded files, as used in problems and reports.
const (
	DocumentsName = "corpus/godoc.jsonl"
	QueriesName   = "corpus/queries.jsonl"
	QrelsName     = "corpus/qrels.tsv"
)

var (
	//go:embed godoc.jsonl
	documents []byte
	//go:embed queries.jsonl
	queries []byte
	//go:embed qrels.tsv
	qrels []byte
)

// Documents returns a reader of the corpus documents, one JSON record
// {id, title, text, metadata} per line. Each call returns a new reader;
// it is safe for concurrent use.
func Documents() io.Reader { return bytes.NewReader(documents) }

// Queries returns a reader of the labelled queries, BEIR queries.jsonl
// ({"_id", "text"} per line).
func Queries() io.Reader { return bytes.NewReader(queries) }

// Qrels returns a reader of the relevance judgements, BEIR qrels TSV
// ("query-id\tcorpus-id\tscore" with a header line; score 2 is the
// package that answers the query, 1 another package that helps).
func Qrels() io.Reader { return bytes.NewReader(qrels) }
