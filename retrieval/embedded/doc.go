// Package embedded is agentbus's default retrieval backend: a local,
// per-tenant index under one directory, with no external service.
//
// Each tenant has a directory <Dir>/<tenant>/ holding
//   - bleve/        a bleve index (English analyzer, BM25 scoring) over
//     title and text, with the chunk's date and metadata indexed for
//     filtering: the "bm25" profile;
//   - chunks.gob    every chunk with its embedding, the source of truth for
//     hits and counts, rewritten atomically on each Index call;
//   - vectors.hnsw  a coder/hnsw graph (cosine distance) exported on Close
//     and imported on open, removed before any change so that a stale
//     graph is never loaded; without it the graph is rebuilt from
//     chunks.gob. It answers the "vector" profile.
//
// Chunks enter through Index, which embeds them with the configured
// llm.Embedder (the deterministic llm.LocalEmbedder by default) and
// replaces any chunk with the same ID in both profiles; they leave as
// retrieval.Hit values from Search. If the embedder changes between runs,
// a tenant's chunks are re-embedded when it is opened. With Config.LSA,
// each tenant instead learns its own embedder from its chunks (latent
// semantic analysis, llm.TrainLSA), kept beside them as lsa.model and
// retrained, with every vector re-embedded, each time the tenant has
// grown by half. BM25 queries carry each qualified identifier's parts
// ("sync.RWMutex" also as "sync" and "RWMutex"), since the analyzer keeps
// the whole identifier as one term. Tenants are opened lazily and kept
// open until Close.
//
// Index is also a retrieval.DocumentStore. Replace (and ReplaceBatch,
// several documents in one go) removes a document's chunks that the new
// version lacks and writes the new ones in one bleve batch and one
// chunks.log frame (which records the deleted IDs beside the new
// records), all under the tenant's write lock that searches take for
// reading: a search sees the old version or the new one, never both or
// neither, and so does an index reopened after a crash. Delete is a
// Replace with no chunks. Each chunk records when it was written, and
// the tenant keeps a document → chunk IDs map for List and Document.
package embedded
