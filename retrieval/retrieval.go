package retrieval

import (
	"context"
	"errors"
	"time"
)

// Profile names every backend understands.
const (
	// ProfileBM25 is lexical full-text search (BM25).
	ProfileBM25 = "bm25"
	// ProfileVector is approximate nearest-neighbour search over the
	// chunks' embeddings.
	ProfileVector = "vector"
)

// RRFK is the Reciprocal Rank Fusion constant: score = Σ 1/(RRFK + rank),
// ranks from 1.
const RRFK = 60

// Sentinel errors.
var (
	// ErrUnknownProfile: the backend has no profile of that name.
	ErrUnknownProfile = errors.New("retrieval: unknown profile")
	// ErrInvalidTenant: a tenant id that is not a valid agentbus tenant.
	ErrInvalidTenant = errors.New("retrieval: invalid tenant")
	// ErrAllProfilesFailed: every profile of an ensemble failed.
	ErrAllProfilesFailed = errors.New("retrieval: every profile failed")
	// ErrInvalidDocument: a document or chunk missing its id or text.
	ErrInvalidDocument = errors.New("retrieval: invalid document")
)

// Document is one source document as ingested: a Markdown or text file, or
// one JSONL record {id, title, text, metadata}.
type Document struct {
	ID       string         `json:"id"`
	Title    string         `json:"title,omitempty"`
	Text     string         `json:"text"`
	Source   string         `json:"source,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Chunk is the unit that is indexed and returned: a passage of one
// document. ID is "<doc id>#<n>", n from 0.
type Chunk struct {
	ID       string         `json:"id"`
	DocID    string         `json:"doc_id"`
	Title    string         `json:"title,omitempty"`
	Text     string         `json:"text"`
	Source   string         `json:"source,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// Date, when known, is what date filters apply to.
	Date time.Time `json:"date,omitzero"`
	// Vector is the chunk's embedding; the backend fills it in when empty.
	Vector []float32 `json:"-"`
}

// Filters restrict a search. Zero values restrict nothing.
type Filters struct {
	// From and To bound Chunk.Date (inclusive); chunks without a date
	// pass only when both are zero.
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
	// Metadata keeps chunks whose metadata has each key with that value.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Query is one search.
type Query struct {
	Text string `json:"text"`
	// K is how many hits to return; default 10.
	K       int     `json:"k,omitempty"`
	Filters Filters `json:"filters,omitzero"`
}

// Limit returns K or its default, 10.
func (q Query) Limit() int {
	if q.K <= 0 {
		return 10
	}
	return q.K
}

// Hit is one search result. Score is the profile's own score; a fused hit
// also carries its RRF score, its rank (from 1) in each profile that
// found it, and those profiles' names, sorted.
type Hit struct {
	ID       string         `json:"id"`
	DocID    string         `json:"doc_id"`
	Title    string         `json:"title,omitempty"`
	Text     string         `json:"text"`
	Source   string         `json:"source,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Score    float64        `json:"score"`
	RRFScore float64        `json:"rrf_score,omitempty"`
	Ranks    Ranks          `json:"ranks,omitempty"`
	Profiles []string       `json:"profiles,omitempty"`
}

// Backend is a per-tenant document index with named search profiles.
// Implementations are safe for concurrent use.
type Backend interface {
	// Name says which backend this is and how it embeds, e.g.
	// "embedded (bleve bm25 + hnsw, local-hash-256)".
	Name() string
	// Profiles lists the profile names Search accepts, default first.
	Profiles() []string
	// Index adds or replaces chunks (by ID) in the tenant's index.
	Index(ctx context.Context, tenant string, chunks []Chunk) error
	// Search runs one profile over the tenant's index, best hit first.
	Search(ctx context.Context, tenant, profile string, q Query) ([]Hit, error)
	// Count is the number of chunks in the tenant's index.
	Count(ctx context.Context, tenant string) (int, error)
	// Close releases the backend's resources.
	Close() error
}
