package retrievaltest_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/retrievaltest"
	"github.com/agentbus/agentbus/subjects"
)

// memory is a brute-force reference backend (exact BM25 and exact cosine
// over every chunk) that shows the suite's expectations are satisfiable by
// the textbook definitions.
type memory struct {
	mu      sync.Mutex
	tenants map[string]map[string]retrieval.Chunk
}

var _ retrieval.Backend = (*memory)(nil)

func (m *memory) Name() string       { return "memory" }
func (m *memory) Profiles() []string { return []string{retrieval.ProfileBM25, retrieval.ProfileVector} }
func (m *memory) Close() error       { return nil }

func (m *memory) Index(ctx context.Context, tenant string, chunks []retrieval.Chunk) error {
	if err := subjects.ValidTenant(tenant); err != nil {
		return fmt.Errorf("%w: %v", retrieval.ErrInvalidTenant, err)
	}
	for _, c := range chunks {
		if c.ID == "" || c.Text == "" {
			return retrieval.ErrInvalidDocument
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tenants[tenant] == nil {
		m.tenants[tenant] = map[string]retrieval.Chunk{}
	}
	vecs, _ := llm.LocalEmbedder{}.Embed(ctx, texts(chunks))
	for i, c := range chunks {
		c.Vector = vecs[i]
		m.tenants[tenant][c.ID] = c
	}
	return nil
}

func texts(chunks []retrieval.Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Title + "\n" + c.Text
	}
	return out
}

func (m *memory) Count(_ context.Context, tenant string) (int, error) {
	if err := subjects.ValidTenant(tenant); err != nil {
		return 0, fmt.Errorf("%w: %v", retrieval.ErrInvalidTenant, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tenants[tenant]), nil
}

func (m *memory) Search(ctx context.Context, tenant, profile string, q retrieval.Query) ([]retrieval.Hit, error) {
	if err := subjects.ValidTenant(tenant); err != nil {
		return nil, fmt.Errorf("%w: %v", retrieval.ErrInvalidTenant, err)
	}
	if profile != retrieval.ProfileBM25 && profile != retrieval.ProfileVector {
		return nil, retrieval.ErrUnknownProfile
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	docs := m.tenants[tenant]
	terms := llm.Tokenize(q.Text)
	df := map[string]int{}
	var totalLen float64
	toks := map[string][]string{}
	for id, c := range docs {
		toks[id] = llm.Tokenize(c.Title + " " + c.Text)
		totalLen += float64(len(toks[id]))
		seen := map[string]bool{}
		for _, w := range toks[id] {
			if !seen[w] {
				df[w]++
				seen[w] = true
			}
		}
	}
	qv, _ := llm.LocalEmbedder{}.Embed(ctx, []string{q.Text})
	var hits []retrieval.Hit
	for id, c := range docs {
		if !q.Filters.Match(c.Date, c.Metadata) {
			continue
		}
		var score float64
		if profile == retrieval.ProfileVector {
			score = llm.Cosine(qv[0], c.Vector)
		} else {
			n, avg := float64(len(docs)), totalLen/float64(len(docs))
			for _, term := range terms {
				var tf float64
				for _, w := range toks[id] {
					if w == term {
						tf++
					}
				}
				if tf == 0 {
					continue
				}
				idf := math.Log(1 + (n-float64(df[term])+0.5)/(float64(df[term])+0.5))
				score += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(len(toks[id]))/avg))
			}
			if score == 0 {
				continue
			}
		}
		hits = append(hits, retrieval.Hit{ID: c.ID, DocID: c.DocID, Title: c.Title, Text: c.Text, Source: c.Source, Metadata: c.Metadata, Score: score})
	}
	slices.SortFunc(hits, func(a, b retrieval.Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.ID, b.ID))
	})
	return hits[:min(len(hits), q.Limit())], nil
}

func TestMemoryBackendPassesSuite(t *testing.T) {
	retrievaltest.Run(t, func(t *testing.T) retrieval.Backend {
		return &memory{tenants: map[string]map[string]retrieval.Chunk{}}
	})
}
