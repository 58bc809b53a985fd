package search_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
)

// memBackend is a small in-memory retrieval.Backend: "bm25" ranks chunks
// by how many query words they contain, "vector" by cosine over the local
// embedder. Profiles listed in fail answer errFailing.
type memBackend struct {
	mu      sync.Mutex
	tenants map[string][]retrieval.Chunk
	fail    map[string]bool
	calls   []string // "<tenant>/<profile>/<query>"
}

var errFailing = errors.New("membackend: profile down")

var _ retrieval.Backend = (*memBackend)(nil)

func newMem(fail ...string) *memBackend {
	m := &memBackend{tenants: map[string][]retrieval.Chunk{}, fail: map[string]bool{}}
	for _, f := range fail {
		m.fail[f] = true
	}
	return m
}

func (m *memBackend) Name() string { return "memory-test" }
func (m *memBackend) Profiles() []string {
	return []string{retrieval.ProfileBM25, retrieval.ProfileVector}
}
func (m *memBackend) Close() error { return nil }

func (m *memBackend) Index(_ context.Context, tenant string, chunks []retrieval.Chunk) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tenants[tenant] = append(m.tenants[tenant], chunks...)
	return nil
}

func (m *memBackend) Count(_ context.Context, tenant string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tenants[tenant]), nil
}

func (m *memBackend) Search(ctx context.Context, tenant, profile string, q retrieval.Query) ([]retrieval.Hit, error) {
	m.mu.Lock()
	m.calls = append(m.calls, tenant+"/"+profile+"/"+q.Text)
	chunks := slices.Clone(m.tenants[tenant])
	failing := m.fail[profile]
	m.mu.Unlock()
	if profile != retrieval.ProfileBM25 && profile != retrieval.ProfileVector {
		return nil, fmt.Errorf("%w: %q", retrieval.ErrUnknownProfile, profile)
	}
	if failing {
		return nil, errFailing
	}
	words := llm.Tokenize(q.Text)
	qv, _ := llm.LocalEmbedder{}.Embed(ctx, []string{q.Text})
	var hits []retrieval.Hit
	for _, c := range chunks {
		if !q.Filters.Match(c.Date, c.Metadata) {
			continue
		}
		var score float64
		if profile == retrieval.ProfileBM25 {
			have := llm.Tokenize(c.Title + " " + c.Text)
			for _, w := range words {
				if slices.Contains(have, w) {
					score++
				}
			}
		} else {
			cv, _ := llm.LocalEmbedder{}.Embed(ctx, []string{c.Title + " " + c.Text})
			score = llm.Cosine(qv[0], cv[0])
		}
		if score <= 0 {
			continue
		}
		hits = append(hits, retrieval.Hit{ID: c.ID, DocID: c.DocID, Title: c.Title, Text: c.Text, Source: c.Source, Score: score})
	}
	slices.SortStableFunc(hits, func(a, b retrieval.Hit) int { return cmp.Compare(b.Score, a.Score) })
	if len(hits) > q.Limit() {
		hits = hits[:q.Limit()]
	}
	return hits, nil
}

func (m *memBackend) searched() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.calls)
	slices.Sort(out)
	return out
}

func chunk(id, text string, date time.Time) retrieval.Chunk {
	doc, _, _ := strings.Cut(id, "#")
	return retrieval.Chunk{ID: id, DocID: doc, Title: doc, Text: text, Source: doc + ".md", Date: date}
}

func request(tenant, input string, deps map[string]string) agents.Request {
	r := agents.Request{TenantID: tenant, WorkflowID: "w1", StepID: "search", Capability: "search",
		Attempt: 1, Delivery: 1, Query: "workflow query", Input: json.RawMessage(input)}
	if len(deps) > 0 {
		r.DependencyOutputs = map[string]json.RawMessage{}
		for k, v := range deps {
			r.DependencyOutputs[k] = json.RawMessage(v)
		}
	}
	return r
}
