// Package vespa is a retrieval.Backend on a Vespa cluster, spoken to over
// net/http: chunks enter through Document v1 (POST
// /document/v1/<namespace>/<doctype>/docid/<chunk id>, one request per
// chunk, bounded concurrency, retries on 429 and 503) and searches leave
// through the Query API (POST /search/ with a JSON body: YQL, rank
// profile, query embedding). No Go client for Vespa exists, so this is a
// small one written against Vespa's documented HTTP formats and tested
// against a local server (package vespatest) that speaks them.
//
// Each tenant has its own schema and document type, <schema>_<tenant>
// (DocType), so one tenant's query never reads another tenant's
// documents. The application package that declares those schemas is
// rendered by ApplicationPackage; the copy for tenant "default" is
// committed under schemas/vespa.
//
// User text never becomes YQL: the query text is sent in the "query"
// parameter that userQuery() reads, the embedding in input.query(q), and
// filter values are escaped YQL string literals.
//
// Partial coverage (a content node timed out, match-phase degradation) is
// not an error: the hits are returned and the Coverage says what was
// searched. SearchWithCoverage returns it, WithCoverageRecorder collects it
// from calls made through the retrieval.Backend interface (e.g. by
// retrieval.Ensemble), and every partial result is logged as a warning.
package vespa
