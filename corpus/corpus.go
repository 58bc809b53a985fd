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
	// The second labelled set: queries written the way Go developers ask
	// (paraphrases, vocabulary mismatch, comparisons, identifiers).
	RealisticQueriesName = "corpus/realistic-queries.jsonl"
	RealisticQrelsName   = "corpus/realistic-qrels.tsv"
)

// IndexBatch is how many chunks a write of the sample corpus to an index
// holds: a few large writes rather than ingest's default 64 make fewer
// BM25 segments to merge (indexing the 6,000 chunks took 16 % less CPU,
// 30 % less under the race detector). Every chunk is small, and the
// corpus is indexed again after an interrupted start.
const IndexBatch = 512

// Names of the labelled sets.
const (
	// SetShipped is queries.jsonl and qrels.tsv, the set the retrieval
	// defaults were chosen on.
	SetShipped = "shipped"
	// SetRealistic is realistic-queries.jsonl and realistic-qrels.tsv,
	// held out: nothing was tuned on its queries.
	SetRealistic = "realistic"
)

var (
	//go:embed godoc.jsonl
	documents []byte
	//go:embed queries.jsonl
	queries []byte
	//go:embed qrels.tsv
	qrels []byte
	//go:embed realistic-queries.jsonl
	realisticQueries []byte
	//go:embed realistic-qrels.tsv
	realisticQrels []byte
)

// Set is one labelled query set over the documents: BEIR queries and
// qrels. It is a plain value, safe for concurrent use.
type Set struct {
	// Name is SetShipped or SetRealistic.
	Name string
	// QueriesName and QrelsName name the embedded files.
	QueriesName, QrelsName string
	queries, qrels         []byte
}

// Queries returns a new reader of the set's queries.
func (s Set) Queries() io.Reader { return bytes.NewReader(s.queries) }

// Qrels returns a new reader of the set's judgements.
func (s Set) Qrels() io.Reader { return bytes.NewReader(s.qrels) }

// Sets returns every labelled set, the shipped one first.
func Sets() []Set {
	return []Set{
		{Name: SetShipped, QueriesName: QueriesName, QrelsName: QrelsName, queries: queries, qrels: qrels},
		{Name: SetRealistic, QueriesName: RealisticQueriesName, QrelsName: RealisticQrelsName,
			queries: realisticQueries, qrels: realisticQrels},
	}
}

// LabelledSet returns the set of that name.
func LabelledSet(name string) (Set, bool) {
	for _, s := range Sets() {
		if s.Name == name {
			return s, true
		}
	}
	return Set{}, false
}

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
