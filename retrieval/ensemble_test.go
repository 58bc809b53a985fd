package retrieval

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBackend answers each profile from a fixed list or error. With a
// barrier, every Search waits until all barrier profiles have entered, so
// a sequential Ensemble would time out: parallelism shown without timing.
type fakeBackend struct {
	lists   map[string][]Hit
	errs    map[string]error
	barrier *barrier
}

type barrier struct {
	mu      sync.Mutex
	waiting int
	all     chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{waiting: n, all: make(chan struct{})} }

func (b *barrier) arrive(ctx context.Context) error {
	b.mu.Lock()
	b.waiting--
	if b.waiting == 0 {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return errors.New("fake: the other profiles never ran concurrently")
	}
}

func (f *fakeBackend) Name() string { return "fake" }
func (f *fakeBackend) Profiles() []string {
	return []string{ProfileBM25, ProfileVector}
}
func (f *fakeBackend) Index(context.Context, string, []Chunk) error { return nil }
func (f *fakeBackend) Count(context.Context, string) (int, error)   { return 0, nil }
func (f *fakeBackend) Close() error                                 { return nil }
func (f *fakeBackend) Search(ctx context.Context, tenant, profile string, q Query) ([]Hit, error) {
	if f.barrier != nil {
		if err := f.barrier.arrive(ctx); err != nil {
			return nil, err
		}
	}
	if err := f.errs[profile]; err != nil {
		return nil, err
	}
	l, ok := f.lists[profile]
	if !ok {
		return nil, ErrUnknownProfile
	}
	return l[:min(len(l), q.Limit())], nil
}

func TestEnsembleRunsProfilesConcurrently(t *testing.T) {
	profiles := []string{"p1", "p2", "p3", "p4"}
	f := &fakeBackend{lists: map[string][]Hit{}, barrier: newBarrier(len(profiles))}
	for _, p := range profiles {
		f.lists[p] = hits("shared", p+"-only")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := Ensemble(ctx, f, "acme", profiles, Query{Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Degraded() {
		t.Fatalf("degraded: %+v", res.Profiles)
	}
	if len(res.Hits) != 5 || res.Hits[0].ID != "shared" || len(res.Hits[0].Profiles) != 4 {
		t.Errorf("hits %v, want shared first (found by all four) then the four singles", ids(res.Hits))
	}
	for i, r := range res.Profiles {
		if r.Profile != profiles[i] || r.Hits != 2 {
			t.Errorf("run %d = %+v", i, r)
		}
	}
}

func TestEnsembleDegradesAndFails(t *testing.T) {
	boom := errors.New("fake: vector engine down")
	f := &fakeBackend{
		lists: map[string][]Hit{ProfileBM25: hits("a", "b", "c"), ProfileVector: hits("c", "d")},
		errs:  map[string]error{ProfileVector: boom},
	}
	res, err := Ensemble(t.Context(), f, "acme", nil, Query{Text: "x", K: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Degraded() {
		t.Error("not degraded with a failing profile")
	}
	if got := ids(res.Hits); strings.Join(got, ",") != "a,b" {
		t.Errorf("hits %v, want bm25's a,b limited to K=2", got)
	}
	if res.Hits[0].RRFScore != 1.0/61 || res.Hits[0].Ranks.Of(ProfileBM25) != 1 {
		t.Errorf("single-profile result not in fused form: %+v", res.Hits[0])
	}
	if r := res.Profiles[1]; r.Profile != ProfileVector || r.Error != boom.Error() || r.Hits != 0 {
		t.Errorf("vector run = %+v, want its error recorded", r)
	}
	if r := res.Profiles[0]; r.Error != "" || r.Hits != 2 {
		t.Errorf("bm25 run = %+v", r)
	}

	f.errs[ProfileBM25] = errors.New("fake: text engine down")
	res, err = Ensemble(t.Context(), f, "acme", nil, Query{Text: "x"})
	if !errors.Is(err, ErrAllProfilesFailed) {
		t.Fatalf("error = %v, want ErrAllProfilesFailed", err)
	}
	for _, want := range []string{"text engine down", "vector engine down"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if len(res.Profiles) != 2 || len(res.Hits) != 0 {
		t.Errorf("result = %+v", res)
	}

	_, err = Ensemble(t.Context(), f, "acme", []string{"nope"}, Query{Text: "x"})
	if !errors.Is(err, ErrAllProfilesFailed) || !strings.Contains(err.Error(), ErrUnknownProfile.Error()) {
		t.Errorf("unknown only profile: %v", err)
	}
}

func TestEnsembleLimit(t *testing.T) {
	f := &fakeBackend{lists: map[string][]Hit{
		ProfileBM25:   hits("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"),
		ProfileVector: hits("m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x"),
	}}
	for _, tt := range []struct{ k, want int }{{0, 10}, {3, 3}, {25, 24}} {
		res, err := Ensemble(t.Context(), f, "acme", nil, Query{Text: "x", K: tt.k})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != tt.want {
			t.Errorf("K=%d: %d hits, want %d", tt.k, len(res.Hits), tt.want)
		}
	}
}
