package routing

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/querykind"
)

// Scoring constants.
const (
	// ruleBase is the confidence a keyword rule gives; each further
	// keyword of the same capability adds ruleStep, up to ruleMax.
	ruleBase, ruleStep, ruleMax = 0.6, 0.1, 0.9
	// simWeight scales the cosine similarity of query and description.
	simWeight = 0.5
	// minRecommend: below it a capability is not recommended (the best
	// one always is).
	minRecommend = 0.2
	// maxRecommend and maxFallbacks bound the lists.
	maxRecommend, maxFallbacks = 3, 2
	// defaultCapability answers when nothing matches.
	defaultCapability = "search"
)

// router scores capabilities against a query. Its description embeddings
// are cached: with a remote embedder they would otherwise cost a request
// per step.
type router struct {
	embedder llm.Embedder
	mu       sync.Mutex
	cache    map[string][]float32
}

type scored struct {
	capability string
	confidence float64
	reason     string
}

// embed returns the vectors of texts, from the cache where it can.
func (r *router) embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var missing []string
	r.mu.Lock()
	for i, t := range texts {
		if v, ok := r.cache[t]; ok {
			out[i] = v
		} else {
			missing = append(missing, t)
		}
	}
	r.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	vs, err := r.embedder.Embed(ctx, missing)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(missing) {
		return nil, fmt.Errorf("routing: embedder %s returned %d vectors for %d texts", r.embedder.Name(), len(vs), len(missing))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range missing {
		r.cache[t] = vs[i]
	}
	for i, t := range texts {
		out[i] = r.cache[t]
	}
	return out, nil
}

// route scores every available capability: keyword rules plus weighted
// similarity of the query to the capability's description. When the
// embedder fails, rules alone decide and the reasoning says so.
func (r *router) route(ctx context.Context, query string, available []string, descriptions map[string]string) Output {
	words := querykind.Words(query)
	text := strings.Join(words, " ")
	texts := []string{query}
	for _, c := range available {
		texts = append(texts, describe(c, descriptions))
	}
	vecs, embedErr := r.embed(ctx, texts)
	var all []scored
	for i, c := range available {
		s := scored{capability: c}
		var why []string
		if m := matches(c, words, text); len(m) > 0 {
			s.confidence = min(ruleMax, ruleBase+ruleStep*float64(len(m)-1))
			why = append(why, "keywords "+quoteAll(m))
		}
		if embedErr == nil {
			sim := max(0, llm.Cosine(vecs[0], vecs[i+1]))
			s.confidence += simWeight * sim
			why = append(why, fmt.Sprintf("similarity %.2f", sim))
		}
		s.confidence = round(min(1, s.confidence))
		s.reason = strings.Join(why, ", ")
		all = append(all, s)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].confidence != all[j].confidence {
			return all[i].confidence > all[j].confidence
		}
		return all[i].capability < all[j].capability
	})
	out := Output{Query: query, Method: agentkit.MethodHeuristic, Embedder: r.embedder.Name(), RecommendedAgents: []Recommendation{}, Fallbacks: []string{}}
	for _, s := range all {
		if len(out.RecommendedAgents) < maxRecommend && (len(out.RecommendedAgents) == 0 || s.confidence >= minRecommend) {
			out.RecommendedAgents = append(out.RecommendedAgents, Recommendation{Capability: s.capability, Confidence: s.confidence, Reason: s.reason})
		}
	}
	// Nothing matched at all: a general information need goes to search.
	if top := out.RecommendedAgents[0]; top.Confidence < minRecommend && slices.Contains(available, defaultCapability) && top.Capability != defaultCapability {
		out.RecommendedAgents = []Recommendation{{Capability: defaultCapability, Confidence: minRecommend, Reason: "no capability matched; search is the default"}}
	}
	out.Confidence = out.RecommendedAgents[0].Confidence
	recommended := map[string]bool{}
	for _, a := range out.RecommendedAgents {
		recommended[a.Capability] = true
	}
	if !recommended[defaultCapability] && slices.Contains(available, defaultCapability) {
		out.Fallbacks = append(out.Fallbacks, defaultCapability)
	}
	for _, s := range all {
		if len(out.Fallbacks) < maxFallbacks && !recommended[s.capability] && !slices.Contains(out.Fallbacks, s.capability) {
			out.Fallbacks = append(out.Fallbacks, s.capability)
		}
	}
	out.Reasoning = reasoning(out, embedErr)
	return out
}

func describe(capability string, descriptions map[string]string) string {
	if d := descriptions[capability]; d != "" {
		return capability + ": " + d
	}
	if d := Builtin[capability]; d != "" {
		return capability + ": " + d
	}
	return strings.NewReplacer("_", " ", "-", " ").Replace(capability)
}

func reasoning(out Output, embedErr error) string {
	parts := make([]string, len(out.RecommendedAgents))
	for i, a := range out.RecommendedAgents {
		parts[i] = fmt.Sprintf("%s %.2f (%s)", a.Capability, a.Confidence, a.Reason)
	}
	s := "recommended " + strings.Join(parts, "; ")
	if len(out.Fallbacks) > 0 {
		s += "; fallbacks " + strings.Join(out.Fallbacks, ", ")
	}
	if embedErr != nil {
		s += fmt.Sprintf("; similarity unavailable (%v), keyword rules only", embedErr)
	}
	return s
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}

func round(x float64) float64 { return float64(int(x*100+0.5)) / 100 }
