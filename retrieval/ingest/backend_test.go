package ingest_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
)

// memory records what it is given, so tests can look at every chunk and
// count Index calls; it does not search.
type memory struct {
	mu      sync.Mutex
	tenants map[string]map[string]retrieval.Chunk
	n       int
}

func newBackend(t *testing.T) *memory {
	t.Helper()
	return &memory{tenants: map[string]map[string]retrieval.Chunk{}}
}

func (m *memory) Name() string       { return "memory" }
func (m *memory) Profiles() []string { return []string{retrieval.ProfileBM25} }
func (m *memory) Close() error       { return nil }

func (m *memory) Index(ctx context.Context, tenant string, chunks []retrieval.Chunk) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	if m.tenants[tenant] == nil {
		m.tenants[tenant] = map[string]retrieval.Chunk{}
	}
	for _, c := range chunks {
		m.tenants[tenant][c.ID] = c
	}
	return nil
}

// Search returns the chunks whose text contains the query, in ID order.
func (m *memory) Search(_ context.Context, tenant, _ string, q retrieval.Query) ([]retrieval.Hit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var hits []retrieval.Hit
	for _, id := range slices.Sorted(maps.Keys(m.tenants[tenant])) {
		if c := m.tenants[tenant][id]; strings.Contains(c.Text, q.Text) {
			hits = append(hits, retrieval.Hit{ID: c.ID, DocID: c.DocID, Text: c.Text})
		}
	}
	return hits, nil
}

func (m *memory) Count(_ context.Context, tenant string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tenants[tenant]), nil
}

func (m *memory) chunks(tenant string) map[string]retrieval.Chunk {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.tenants[tenant])
}

func (m *memory) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

func (m *memory) resetCalls() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n = 0
}
