// Package vespatest is a local stand-in for a Vespa container, for tests:
// an httptest server speaking the parts of Vespa's documented HTTP APIs
// that package vespa uses. Document v1 puts are stored per document type;
// the Query API understands exactly the YQL package vespa emits
// (userQuery() ranked by BM25 over title and text, nearestNeighbor ranked
// by angular closeness, date ranges, sameElement metadata filters, true)
// and answers in Vespa's default JSON result format with coverage and
// errors. Anything else it refuses the way Vespa does (HTTP 400, error
// code 4), so a client emitting YQL it did not mean fails its tests.
//
// Faults can be injected: a feed answered 429 or 400, a query answered
// 500, root.errors with code 12, partial coverage with degraded.timeout.
package vespatest
