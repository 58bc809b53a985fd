// Package eval measures retrieval quality on labelled queries in BEIR
// format: queries.jsonl ({"_id", "text"} per line) and a qrels TSV
// ("query-id\tcorpus-id\tscore", graded relevance). Each query goes
// through query understanding (querykind.Understand: framing words out,
// unless Config.Raw) and is run through every profile of a
// retrieval.Backend, through the weighted RRF ensemble of them (a
// comparison's sides searched as lists of their own, as the search agent
// does) and through that ensemble reranked (Config.Reranker); the chunk
// hits are mapped to their documents at the rank of each document's first
// chunk, and NDCG@k (linear gains, log2 discount, as trec_eval computes
// it), Recall@k and MRR@k are reported per query and as means.
package eval
