// Package selectweb is the built-in select agent (capability "select"),
// the middle of the web knowledge graph web_search → select → ingest: it
// decides which of the pages a web search found are worth indexing, by
// the seed system's rules (NOESIS 2's external knowledge graph), and says
// why it dropped each of the others.
//
// Data enters as the outputs of the web_search steps the select step
// depends on ({"results": [{"url", "title", "snippet", "content",
// "score"}]}, see agents/websearch) and leaves as the step's output:
// {"documents": [...], "dropped": [{"url", "rule", "reason"}]}, where
// each document is what the ingest agent indexes ({"id", "title", "text",
// "source", "metadata"}; id and source are the page's normalized URL,
// text its content or else its snippet) and what the composer cites
// with its URL.
//
// The rules, in order: a result needs an http(s) URL; a URL seen before
// (normalized: lowercase scheme and host, no default port, no fragment,
// no tracking parameters, no trailing slash) is a duplicate; a page on a
// blocked domain (or its subdomains) is dropped; a page whose content
// carries a noindex marker (robots meta, X-Robots-Tag) is dropped; a
// snippet shorter than MinSnippet (40) characters is too thin; of the
// rest, PDFs come first when PreferPDF (the seed prefers documents to
// pages), then by score, and the first TopK (5) are kept.
package selectweb
