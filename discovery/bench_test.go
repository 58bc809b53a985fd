package discovery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/coder/hnsw"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/subjects"
)

// The discovery benchmark: 50 and 500 registered agents with distinct
// cards (cards_test.go), the labelled routing queries, and three ways to
// find the top 5 for a query, side by side in one run:
//
//   - index: Registry.Discover, the in-memory index (exact top-k over a
//     contiguous matrix, health and load aware);
//   - index-under-heartbeats: the same while every agent heartbeats once
//     a second (the index's watch applies each put);
//   - linear-kv-scan: what Discover did before the index, listing the
//     whole bucket and decoding every registration per query;
//   - hnsw, hnsw-m32-ef200: coder/hnsw over the same vectors, without
//     health or load, with its defaults and tuned for recall.
//
// Each reports top1_acc and top5_acc (the share of labelled queries whose
// agent comes first, or among the 5 returned) and the latency of one
// discovery, query embedding included, as p50_us and p99_us. Run:
//
//	go test ./discovery -run '^$' -bench Discover -benchtime 2s
func BenchmarkDiscover(b *testing.B) {
	for _, n := range []int{50, 500} {
		env := bustest.New(b)
		reg, err := discovery.New(context.Background(), env.Bus, nil)
		if err != nil {
			b.Fatal(err)
		}
		cards := agentCards(n)
		registerCards(b, reg, cards)
		waitAgents(b, reg, n)
		kv, err := env.Bus.KV(context.Background(), subjects.BucketAgents)
		if err != nil {
			b.Fatal(err)
		}
		emb := llm.LocalEmbedder{}
		graph, tuned := hnswOf(b, cards, 16, 20), hnswOf(b, cards, 32, 200)
		hnswSearch := func(g *hnsw.Graph[string]) func(ctx context.Context, query string, k int) ([]string, error) {
			return func(ctx context.Context, query string, k int) ([]string, error) {
				qv, err := emb.Embed(ctx, []string{query})
				if err != nil {
					return nil, err
				}
				var out []string
				for _, node := range g.Search(qv[0], k) {
					out = append(out, node.Key)
				}
				return out, nil
			}
		}
		index := func(ctx context.Context, query string, k int) ([]string, error) {
			ms, err := reg.Discover(ctx, query, k)
			return matchNames(ms), err
		}
		variants := []struct {
			name     string
			discover func(ctx context.Context, query string, k int) ([]string, error)
			// heartbeats puts registrations again while it runs, as
			// every agent heartbeating each second would.
			heartbeats bool
		}{
			{name: "index", discover: index},
			{name: "index-under-heartbeats", discover: index, heartbeats: true},
			{name: "linear-kv-scan", discover: func(ctx context.Context, query string, k int) ([]string, error) {
				ms, err := linearDiscover(ctx, kv, emb, query, k)
				return matchNames(ms), err
			}},
			{name: "hnsw", discover: hnswSearch(graph)},
			{name: "hnsw-m32-ef200", discover: hnswSearch(tuned)},
		}
		for _, v := range variants {
			b.Run(fmt.Sprintf("agents=%d/%s", n, v.name), func(b *testing.B) {
				ctx := context.Background()
				top1, top5 := accuracy(b, v.discover)
				if v.heartbeats {
					stop := heartbeat(b, reg, cards)
					defer stop()
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					q := routingQueries[i%len(routingQueries)].query
					start := time.Now()
					if _, err := v.discover(ctx, q, 5); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50_us")
				b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Nanoseconds())/1e3, "p99_us")
				b.ReportMetric(top1, "top1_acc")
				b.ReportMetric(top5, "top5_acc")
			})
		}
		reg.Close()
	}
}

// heartbeat puts the cards' registrations again, one every 1s/len(cards)
// (every agent once a second, five times the default heartbeat rate),
// until the returned stop is called.
func heartbeat(tb testing.TB, reg *discovery.Registry, cards []card) (stop func()) {
	tb.Helper()
	regs := make([]discovery.Registration, len(cards))
	for i, c := range cards {
		regs[i] = registrationOf(tb, c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / time.Duration(len(cards)))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r := regs[i%len(regs)]
			r.HeartbeatAt = time.Now().UTC() // idle: accuracy stays comparable

			_ = reg.Put(ctx, r, time.Hour)
		}
	}()
	return func() { cancel(); <-done }
}

// accuracy is the share of labelled queries whose agent discover ranks
// first, and among its top 5.
func accuracy(tb testing.TB, discover func(ctx context.Context, query string, k int) ([]string, error)) (top1, top5 float64) {
	tb.Helper()
	var one, five int
	for _, q := range routingQueries {
		got, err := discover(context.Background(), q.query, 5)
		if err != nil {
			tb.Fatal(err)
		}
		if len(got) > 0 && got[0] == q.want {
			one++
		}
		if slices.Contains(got, q.want) {
			five++
		}
	}
	n := float64(len(routingQueries))
	return float64(one) / n, float64(five) / n
}

// registrationOf is a live, healthy, idle instance of c, embedded with the
// local embedder as a worker would.
func registrationOf(tb testing.TB, c card) discovery.Registration {
	tb.Helper()
	text := discovery.EmbeddingText(c.name, c.capabilities, c.description, c.examples)
	vs, err := llm.LocalEmbedder{}.Embed(context.Background(), []string{text})
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now().UTC()
	return discovery.Registration{
		Instance: c.name + "-1", Worker: "bench", Name: c.name, Version: "1.0.0", Description: c.description,
		Capabilities: c.capabilities, Examples: c.examples, PID: os.Getpid(), StartedAt: now, HeartbeatAt: now,
		HeartbeatMS: time.Hour.Milliseconds(), SelfHealthy: true,
		Embedder: llm.LocalEmbedder{}.Name(), EmbeddingText: text, Embedding: vs[0],
	}
}

func registerCards(tb testing.TB, reg *discovery.Registry, cards []card) {
	tb.Helper()
	for _, c := range cards {
		if err := reg.Put(context.Background(), registrationOf(tb, c), time.Hour); err != nil {
			tb.Fatal(err)
		}
	}
}

// waitAgents waits until the registry's index holds n agents.
func waitAgents(tb testing.TB, reg *discovery.Registry, n int) {
	tb.Helper()
	eventually(tb, fmt.Sprintf("the index holds %d agents", n), func() (bool, string) {
		all, err := reg.Catalog(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		return len(all) == n, fmt.Sprintf("%d agents", len(all))
	})
}

func matchNames(ms []discovery.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// hnswOf is an HNSW graph of the cards' vectors with m neighbours per
// node and ef candidates per search (coder/hnsw's defaults are 16 and 20)
// and a seeded level generator; its build still varies a little from run
// to run.
func hnswOf(tb testing.TB, cards []card, m, ef int) *hnsw.Graph[string] {
	tb.Helper()
	g := hnsw.NewGraph[string]()
	g.M, g.EfSearch = m, ef
	g.Rng = rand.New(rand.NewSource(1))
	for _, c := range cards {
		g.Add(hnsw.MakeNode(c.name, registrationOf(tb, c).Embedding))
	}
	return g
}

// linearDiscover is Discover as it was before the index, the baseline:
// list the whole bucket, decode every registration, embed again those
// made with another embedder, score each agent, sort.
func linearDiscover(ctx context.Context, kv *bus.KV, emb llm.Embedder, query string, k int) ([]discovery.Match, error) {
	entries, err := kv.List(ctx)
	if err != nil {
		return nil, err
	}
	qv, err := emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	byName := map[string]*discovery.Match{}
	vectors := map[string][]float32{}
	for _, e := range entries {
		var reg discovery.Registration
		if json.Unmarshal(e.Value, &reg) != nil {
			continue
		}
		h := reg.Health(now)
		if h == discovery.Unreachable {
			continue
		}
		m, ok := byName[reg.Name]
		if !ok {
			m = &discovery.Match{Name: reg.Name, Version: reg.Version, Description: reg.Description, Capabilities: reg.Capabilities, Examples: reg.Examples}
			byName[reg.Name] = m
			vec := reg.Embedding
			if reg.Embedder != emb.Name() || len(vec) == 0 {
				vs, err := emb.Embed(ctx, []string{reg.EmbeddingText})
				if err != nil {
					return nil, err
				}
				vec = vs[0]
			}
			vectors[reg.Name] = vec
		}
		m.Instances++
		if h == discovery.Healthy {
			m.Healthy++
		}
	}
	out := make([]discovery.Match, 0, len(byName))
	for name, m := range byName {
		m.Score = llm.Cosine(qv[0], vectors[name])
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Name < out[j].Name
	})
	return out[:min(k, len(out))], nil
}
