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
// Backend is also a retrieval.DocumentStore. Document v1 offers no
// transaction over several documents, so what Replace can promise is
// weaker than the embedded index's lock: it feeds the new chunks with a
// new generation (the gen field, increasing) and only then removes the
// document's other generations with a selection delete (DELETE
// /document/v1/<ns>/<doctype>/docid?selection=<doctype>.doc_id=="…" and
// <doctype>.gen!=<new>&cluster=…, following continuation tokens). A
// searcher therefore never finds neither version, and Search keeps, per
// document, only its newest generation among the hits, so no result list
// mixes versions; two searches during the window may still disagree, and
// a result then may hold fewer than K hits. Delete is a selection delete
// on doc_id; Document and List visit (GET with a selection and a
// fieldSet) and sum chunks up per document — List passes over all of a
// tenant's chunks per call. Chunks fed by Index have generation 0:
// a document written by Index and later by Replace converges to the
// replaced version, but Index-ing single chunks into a document that
// Replace wrote leaves them hidden behind the newer generation.
//
// Partial coverage (a content node timed out, match-phase degradation) is
// not an error: the hits are returned and the Coverage says what was
// searched. SearchWithCoverage returns it, WithCoverageRecorder collects it
// from calls made through the retrieval.Backend interface (e.g. by
// retrieval.Ensemble), and every partial result is logged as a warning.
package vespa
