// Package retrieval is agentbus's search layer: documents cut into chunks,
// per-tenant indexes behind a Backend with named search profiles (BM25 full
// text, vector ANN, …), and the ensemble that searches several profiles in
// parallel and fuses their rankings with Reciprocal Rank Fusion (Fuse,
// or FuseWeighted with ProfileWeights: offline, vector lists weigh half).
//
// Fused hits can be reranked (Reranker): Deterministic scores coverage of
// the query's terms by each hit's document, proximity, title and heading
// matches and Go identifiers matched as package + symbol, over the fused
// order; LLM asks a chat model (any Completer, e.g. *llm.Chat) to order
// the top 20 and keep 8, checks that its JSON answer names only hits it
// was shown, and on any failure falls back to the deterministic reranker
// and says why (Reranked.Fallback).
//
// Backends live in sub-packages: retrieval/embedded (the default, a local
// index under --data: bleve for BM25, coder/hnsw for vectors) and
// retrieval/vespa (Vespa's Document v1 and Query APIs over net/http).
// Every call names its tenant; a backend never answers one tenant's query
// from another tenant's documents.
//
// Whole documents are managed through DocumentStore, which both backends
// implement beside Backend: List (paged by document ID, with chunk counts
// and when each was indexed), Document, Delete (every chunk of a
// document) and Replace/ReplaceBatch (a document's complete new chunks,
// atomic to searchers: see each backend for how far that holds). It is
// its own interface so that Backend stays small for read-only and test
// backends; reach it with AsDocumentStore:
//
//	store, err := retrieval.AsDocumentStore(backend) // ErrUnsupported if not
//	err = store.Replace(ctx, tenant, "handbook.pdf", chunks)
//	page, err := store.List(ctx, tenant, retrieval.ListOptions{Limit: 50})
//	n, err := store.Delete(ctx, tenant, "handbook.pdf") // ErrNotFound if absent
package retrieval
