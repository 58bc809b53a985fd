// Package ingest feeds files into a retrieval.Backend. Every file but a
// JSONL one becomes one document, whose id is the path relative to the
// directory given (Run) or the name or id given (Files):
//
//	Markdown  .md .markdown   sections at headings; a leading "# Title" is the title
//	text      .txt
//	HTML      .html .htm .xhtml  main content only (go-readability): no
//	                          navigation, sidebars or footers; h1–h6 kept as headings
//	PDF       .pdf            text per page; chunks carry metadata page (1-based)
//	                          and the document pages (ledongthuc/pdf, pure Go)
//	DOCX      .docx           word/document.xml; Title and Heading N styles
//	                          become headings, the core title the title
//	CSV       .csv            rows in chunks, each chunk starting with the
//	XLSX      .xlsx           header row; metadata sheet, row_start, row_end
//
// JSONL files (.jsonl, .ndjson) hold one document per line, {id, title,
// text, metadata}, checked against the "index.record" schema. Every chunk
// also carries metadata format (and path for files).
//
// The format is decided by Detect from the extension and the content
// (magic bytes, http.DetectContentType, the parts a zip holds): a PDF
// named .txt is read as PDF, an upload without an extension is sniffed,
// and binary content named as text is refused, as are Office 97–2003
// files and password-protected Office files (with a hint to resave them). Extract reads one file's
// text; Chunks cuts it into chunks; the Ingester does both and writes the
// chunks to the tenant's index in batches — as whole documents through
// retrieval.DocumentStore.ReplaceBatch when the backend is one, so a
// re-indexed document loses chunks its new version no longer has,
// atomically — and the backend embeds them.
//
// A file that cannot be read is a problem of that file only: a Problem
// in the Summary (file, reason, Code) and, as an error, a *FileError
// wrapping ErrUnsupported, ErrMismatch, ErrTooLarge, ErrCorrupt,
// ErrInvalidUTF8 or ErrEmpty; the rest is ingested. Reading is bounded by
// Limits: the file size, what a DOCX or XLSX zip decompresses to and how
// many entries it has (checked before anything is inflated), PDF pages
// and table cells. Text files that are not UTF-8 (Markdown, text, CSV,
// JSONL) are refused with the offset and line of the first bad byte, not
// repaired: a guess at their encoding would index mojibake. Text that
// the PDF, XLSX and HTML readers decode is repaired instead (invalid
// sequences become U+FFFD), since it is the reader's output, not the
// user's bytes; an HTML page's declared charset is honoured. A panic in
// a third-party reader on a malformed file is recovered and reported as
// ErrCorrupt.
//
// A run is resumable: a journal file records, after each batch is
// written, which files are finished (path, size, mtime, SHA-256) and, for
// a JSONL file in progress, the last line whose chunks are all written.
// A rerun skips finished, unchanged files — unless the backend is a
// DocumentStore that no longer has the file's document (deleted since,
// e.g. through the API), which is then read again — and continues a JSONL
// file after that line, so an interrupted run loses at most one batch of
// work and writes no duplicates (chunks are replaced by ID in any case).
//
// A bad line or an unreadable file is reported (file:line and what is
// wrong, with a JSON pointer for schema problems) and the run goes on;
// only backend, journal and context errors stop it.
package ingest
