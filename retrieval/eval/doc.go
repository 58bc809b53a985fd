// Package eval measures retrieval quality on labelled queries in BEIR
// format: queries.jsonl ({"_id", "text"} per line) and a qrels TSV
// ("query-id\tcorpus-id\tscore", graded relevance). Each query is run
// through every profile of a retrieval.Backend and through the RRF
// ensemble (retrieval.Ensemble); the chunk hits are mapped to their
// documents at the rank of each document's first chunk, and NDCG@k
// (linear gains, log2 discount, as trec_eval computes it), Recall@k and
// MRR@k are reported per query and as means.
package eval
