// Package ingest is the built-in ingest agent: it indexes documents
// uploaded through the gateway (POST /v1/documents) into the tenant's
// search index, as the steps of an ordinary workflow, so ingestion scales
// out with workers, reports progress in the event log, and is retried and
// dead-lettered like any other work.
//
// An ingest step names uploads held in the bus's object store (see
// bus.UploadName); the agent reads each one, extracts its text
// (retrieval/ingest: Markdown, text, HTML, PDF, DOCX, CSV, XLSX, and JSONL
// records), cuts it into chunks and replaces the document's chunks in the
// index in one atomic write (retrieval.DocumentStore). A file that cannot
// be read is a problem of that file, reported in the step's output with
// its reason; the others are indexed. Replacing by document id makes a
// redelivered step harmless.
//
// The package also serves the tenant's document operations (list, get,
// delete) on the subjects "agentbus.<tenant>.documents.<op>", answered by
// any process that runs the agent (see Serve).
package ingest
