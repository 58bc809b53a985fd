package embedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/subjects"
)

// ErrClosed is returned by every call on a closed Index.
var ErrClosed = errors.New("embedded: index closed")

// ErrLocked is returned by Open when another process has the directory
// open.
var ErrLocked = errors.New("embedded: index directory in use")

// Config configures an Index. Dir is required; the zero value of every
// other field means its default.
type Config struct {
	// Dir holds one sub-directory per tenant, e.g. <data>/index.
	Dir string
	// Embedder embeds chunks and queries; default llm.LocalEmbedder{}.
	// Ignored when LSA is set.
	Embedder llm.Embedder
	// LSA, when set, makes every tenant learn its own embedder from its
	// chunks (llm.TrainLSA) instead of using Embedder: trained once the
	// tenant has 4×Dim chunks and again each time it has grown by half
	// since (so a growing tenant pays about three trainings on its final
	// size), every vector re-embedded with the new model. Until
	// the first training, vectors come from the hashing embedder at the
	// model's dimension. Chunks' own vectors are ignored.
	LSA *llm.LSAConfig
	// EfSearch is the HNSW candidate list size, and the fewest neighbours
	// a graph walk asks for; default 100.
	EfSearch int
	// M is the HNSW neighbour count per node; default 32.
	M int
	// ExactMax: a tenant with at most this many vectors is searched by
	// comparing the query with each of them, which at that size is fast
	// (a few milliseconds) and, unlike coder/hnsw's greedy walk (measured
	// self-recall 0.8 at 3,000 vectors; on the sample corpus only 23% of
	// its top 50 agree with exact search), exact; default 16384,
	// negative always walks the graph.
	ExactMax int
	// BruteForceMax: a filtered vector search whose filter passes at most
	// this many chunks compares the query with each of them exactly
	// instead of walking the graph; default 2048.
	BruteForceMax int
}

func (c *Config) setDefaults() {
	if c.LSA != nil {
		lsa := *c.LSA
		if lsa.Dim == 0 {
			lsa.Dim = 128
		}
		c.LSA = &lsa
		// Until a tenant's first training, and for Embedder(): the
		// hashing embedder at the model's dimension.
		c.Embedder = llm.LocalEmbedder{Dim: lsa.Dim}
	}
	if c.Embedder == nil {
		c.Embedder = llm.LocalEmbedder{}
	}
	if c.EfSearch == 0 {
		c.EfSearch = 100
	}
	if c.M == 0 {
		c.M = 32
	}
	if c.ExactMax == 0 {
		c.ExactMax = 16384
	}
	if c.BruteForceMax == 0 {
		c.BruteForceMax = 2048
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Dir) == "" {
		errs = append(errs, errors.New("embedded: config needs Dir"))
	}
	if c.EfSearch < 0 {
		errs = append(errs, fmt.Errorf("embedded: EfSearch %d is negative", c.EfSearch))
	}
	if c.M < 0 {
		errs = append(errs, fmt.Errorf("embedded: M %d is negative", c.M))
	}
	if c.BruteForceMax < 0 {
		errs = append(errs, fmt.Errorf("embedded: BruteForceMax %d is negative", c.BruteForceMax))
	}
	return errors.Join(errs...)
}

// Index is the embedded retrieval.Backend. It is safe for concurrent use.
type Index struct {
	cfg     Config
	unlock  func()     // releases the directory lock
	mu      sync.Mutex // guards tenants and closed
	tenants map[string]*tenant
	closed  bool
}

var _ retrieval.DocumentStore = (*Index)(nil)

// Open checks cfg, creates Dir if needed and locks it: a second process
// (or a second Open in this one) gets ErrLocked until Close. Tenants are
// opened on first use.
func Open(cfg Config) (*Index, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded: create index directory: %w", err)
	}
	unlock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	return &Index{cfg: cfg, unlock: unlock, tenants: map[string]*tenant{}}, nil
}

// Name says what answers and how it embeds, e.g.
// "embedded (bleve bm25 + hnsw vector, local-hash-256)".
func (ix *Index) Name() string {
	if ix.cfg.LSA != nil {
		return "embedded (bleve bm25 + hnsw vector, local-lsa-" + strconv.Itoa(ix.cfg.LSA.Dim) + " trained per tenant)"
	}
	return "embedded (bleve bm25 + hnsw vector, " + ix.cfg.Embedder.Name() + ")"
}

// Embedder is the embedder in use, so that callers can report it.
func (ix *Index) Embedder() llm.Embedder { return ix.cfg.Embedder }

// Profiles is bm25 (the default) and vector.
func (ix *Index) Profiles() []string {
	return []string{retrieval.ProfileBM25, retrieval.ProfileVector}
}

// Index embeds the chunks that carry no vector and adds or replaces them
// (by ID) in the tenant's index. A batch with an invalid chunk is rejected
// whole, before anything is written.
func (ix *Index) Index(ctx context.Context, tenantID string, chunks []retrieval.Chunk) error {
	if err := validTenant(tenantID); err != nil {
		return err
	}
	for i, c := range chunks {
		if c.ID == "" {
			return fmt.Errorf("%w: chunk %d has no id", retrieval.ErrInvalidDocument, i)
		}
		if strings.TrimSpace(c.Text) == "" {
			return fmt.Errorf("%w: chunk %q has no text", retrieval.ErrInvalidDocument, c.ID)
		}
	}
	if len(chunks) == 0 {
		return nil
	}
	recs, err := ix.records(ctx, chunks)
	if err != nil {
		return err
	}
	t, err := ix.tenant(ctx, tenantID, true)
	if err != nil {
		return err
	}
	if err := t.put(recs); err != nil {
		return err
	}
	return t.maybeTrain(ctx)
}

// Search runs one profile over the tenant's index, best hit first. A
// tenant that was never indexed has no hits.
func (ix *Index) Search(ctx context.Context, tenantID, profile string, q retrieval.Query) ([]retrieval.Hit, error) {
	if err := validTenant(tenantID); err != nil {
		return nil, err
	}
	if profile != retrieval.ProfileBM25 && profile != retrieval.ProfileVector {
		return nil, fmt.Errorf("%w: %q (embedded has %v)", retrieval.ErrUnknownProfile, profile, ix.Profiles())
	}
	t, err := ix.tenant(ctx, tenantID, false)
	if err != nil || t == nil {
		return nil, err
	}
	if profile == retrieval.ProfileBM25 {
		return t.searchBM25(q)
	}
	emb := t.embedder()
	vecs, err := emb.Embed(ctx, []string{q.Text})
	if err != nil {
		return nil, fmt.Errorf("embedded: embed query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("embedded: embedder %s returned %d vectors for one query", emb.Name(), len(vecs))
	}
	return t.searchVector(vecs[0], q)
}

// Count is the number of chunks in the tenant's index.
func (ix *Index) Count(ctx context.Context, tenantID string) (int, error) {
	if err := validTenant(tenantID); err != nil {
		return 0, err
	}
	t, err := ix.tenant(ctx, tenantID, false)
	if err != nil || t == nil {
		return 0, err
	}
	return t.count()
}

// Close saves every open tenant's vector graph and closes its indexes. It
// is safe to call more than once.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	var errs []error
	for _, t := range ix.tenants {
		errs = append(errs, t.close())
	}
	ix.tenants = nil
	ix.unlock()
	return errors.Join(errs...)
}

// tenant returns the open tenant, opening it on first use. Without create,
// a tenant with no directory yet is nil: reads never create one.
func (ix *Index) tenant(ctx context.Context, id string, create bool) (*tenant, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil, ErrClosed
	}
	if t := ix.tenants[id]; t != nil {
		return t, nil
	}
	dir := filepath.Join(ix.cfg.Dir, id)
	if !create {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	t, err := openTenant(ctx, dir, ix.cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded: open tenant %s: %w", id, err)
	}
	ix.tenants[id] = t
	return t, nil
}

// records embeds the chunks that carry no vector.
func (ix *Index) records(ctx context.Context, chunks []retrieval.Chunk) ([]record, error) {
	var texts []string
	var at []int
	for i, c := range chunks {
		if ix.cfg.LSA != nil {
			continue // the tenant's own model embeds them as they are written
		}
		if len(c.Vector) == 0 {
			texts = append(texts, embedText(c.Title, c.Text))
			at = append(at, i)
		}
	}
	vecs, err := ix.cfg.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embedded: embed chunks: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("embedded: embedder %s returned %d vectors for %d chunks", ix.cfg.Embedder.Name(), len(vecs), len(texts))
	}
	recs := make([]record, len(chunks))
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, c := range chunks {
		if recs[i], err = newRecord(c); err != nil {
			return nil, err
		}
		recs[i].Indexed = now
	}
	for j, i := range at {
		recs[i].Vector = vecs[j]
	}
	if ix.cfg.LSA != nil {
		for i := range recs {
			recs[i].Vector = nil
		}
	}
	return recs, nil
}

// embedText is what is embedded for a chunk: its title, then its text.
func embedText(title, text string) string {
	if title == "" {
		return text
	}
	return title + "\n" + text
}

func validTenant(id string) error {
	if err := subjects.ValidTenant(id); err != nil {
		return fmt.Errorf("%w: %w", retrieval.ErrInvalidTenant, err)
	}
	return nil
}
