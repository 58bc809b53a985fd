// Package ingesttest makes small files of every format package ingest
// reads — a PDF with one page per string, a DOCX with headings, an XLSX
// with sheets, an HTML page with navigation around its article, and zip
// bombs — so tests and benchmarks (here and in the gateway's upload
// tests) need no fixture files. Every function is deterministic and safe
// for concurrent use.
package ingesttest
