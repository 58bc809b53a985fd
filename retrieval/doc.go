// Package retrieval is agentbus's search layer: documents cut into chunks,
// per-tenant indexes behind a Backend with named search profiles (BM25 full
// text, vector ANN, …), and the ensemble that searches several profiles in
// parallel and fuses their rankings with Reciprocal Rank Fusion.
//
// Backends live in sub-packages: retrieval/embedded (the default, a local
// index under --data: bleve for BM25, coder/hnsw for vectors) and
// retrieval/vespa (Vespa's Document v1 and Query APIs over net/http).
// Every call names its tenant; a backend never answers one tenant's query
// from another tenant's documents.
package retrieval
