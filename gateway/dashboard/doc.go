// Package dashboard serves agentbus's browser dashboard: the single-page
// application built from web/ (TypeScript, Preact, Vite) into dist/ and
// embedded here with go:embed, so that the Go build never needs Node.
//
// Data enters only at build time: `make web` runs npm in web/ and writes
// dist/, including dist/sources.sha256, a digest of the sources it was built
// from (see Sources); a test fails when web/src changed since, so stale
// assets are never committed unnoticed. Data leaves as HTTP answers from
// Handler: hashed assets under /assets/ with a year-long immutable cache,
// and index.html, never cached, for every page of the application
// (Patterns). Every answer carries a strict Content-Security-Policy: the
// page loads scripts, styles and connections from its own origin only.
//
// The dashboard holds no data of its own: it calls the gateway's /v1 API
// from the browser with the token cookie (gateway.TokenCookie), so the
// gateway serves its routes without authentication.
package dashboard
