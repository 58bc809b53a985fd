// Package ingest feeds files into a retrieval.Backend: Markdown (.md,
// .markdown) and text (.txt) files become one document each, with the
// path relative to the directory given as the document id; JSONL files
// (.jsonl) hold one document per line, {id, title, text, metadata},
// checked against the "index.record" schema. Documents are cut into
// chunks by a retrieval.Chunker and written to the tenant's index in
// batches; the backend embeds them.
//
// A run is resumable: a journal file records, after each batch is
// written, which files are finished (path, size, mtime, SHA-256) and, for
// a JSONL file in progress, the last line whose chunks are all written.
// A rerun skips finished, unchanged files and continues a JSONL file after
// that line, so an interrupted run loses at most one batch of work and
// writes no duplicates (chunks are replaced by ID in any case).
//
// A bad line or an unreadable file is reported (file:line and what is
// wrong, with a JSON pointer for schema problems) and the run goes on;
// only backend, journal and context errors stop it.
package ingest
