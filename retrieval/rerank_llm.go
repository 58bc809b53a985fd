package retrieval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Completer answers a system and a user message with a JSON object; an
// *llm.Chat is one (CompleteJSON). Declared here so that retrieval does
// not depend on the llm package.
type Completer interface {
	CompleteJSON(ctx context.Context, system, user string) (string, error)
}

// LLMConfig configures an LLM reranker. Chat is required; the zero value
// of every other field means its default.
type LLMConfig struct {
	// Chat answers the ranking prompt.
	Chat Completer
	// In is how many of the first hits the model sees; default 20.
	In int
	// Out is how many hits the model's ranking keeps; default 8.
	Out int
	// Fallback orders the hits when the model fails or answers out of
	// contract; default Deterministic{}.
	Fallback Reranker
	// MaxChars bounds each hit's text in the prompt; default 500.
	MaxChars int
}

func (c *LLMConfig) setDefaults() {
	if c.In == 0 {
		c.In = 20
	}
	if c.Out == 0 {
		c.Out = 8
	}
	if c.Fallback == nil {
		c.Fallback = Deterministic{}
	}
	if c.MaxChars == 0 {
		c.MaxChars = 500
	}
}

// Validate reports every problem with the configuration.
func (c LLMConfig) Validate() error {
	var errs []error
	if c.Chat == nil {
		errs = append(errs, errors.New("retrieval: LLM reranker needs a Chat"))
	}
	if c.In < 1 || c.Out < 1 || c.Out > c.In {
		errs = append(errs, fmt.Errorf("retrieval: LLM reranker In %d, Out %d: want 1 ≤ Out ≤ In", c.In, c.Out))
	}
	if c.MaxChars < 50 {
		errs = append(errs, fmt.Errorf("retrieval: LLM reranker MaxChars %d: want at least 50", c.MaxChars))
	}
	return errors.Join(errs...)
}

// LLM reranks the first In hits with a chat model, keeping its best Out.
// The model must answer {"ids": [...]} naming only hits it was shown, each
// once, at least one; any failure — the call, JSON, an unknown id — falls
// back to Config.Fallback, and Reranked.Fallback says why. It is safe for
// concurrent use.
type LLM struct {
	cfg LLMConfig
}

var _ Reranker = (*LLM)(nil)

// NewLLM checks cfg and makes the reranker.
func NewLLM(cfg LLMConfig) (*LLM, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &LLM{cfg: cfg}, nil
}

// Name is RerankLLM.
func (*LLM) Name() string { return RerankLLM }

const llmRerankSystem = `You rank search results for a developer's query. You are given the query and numbered passages, each with an id. ` +
	`Answer with a JSON object {"ids": [...]} listing the ids of the most relevant passages, most relevant first, ` +
	`at most %d ids, each id exactly as given and at most once. Relevance: the passage answers the query or documents what it names.`

// Rerank asks the model to order the first In hits and keeps its best
// Out; on any failure the fallback orders them (and the first Out are
// kept) and the reason is reported.
func (l *LLM) Rerank(ctx context.Context, q RerankQuery, hits []Hit) (Reranked, error) {
	if len(hits) == 0 {
		return Reranked{Hits: hits, By: RerankNone}, nil
	}
	in := hits[:min(len(hits), l.cfg.In)]
	ids, err := l.ask(ctx, q, in)
	if err != nil {
		if ctx.Err() != nil {
			return Reranked{}, ctx.Err()
		}
		fb, ferr := l.cfg.Fallback.Rerank(ctx, q, hits)
		if ferr != nil {
			return Reranked{}, fmt.Errorf("%w: llm: %v; fallback %s: %w", ErrRerank, err, l.cfg.Fallback.Name(), ferr)
		}
		fb.Hits = fb.Hits[:min(len(fb.Hits), l.cfg.Out)]
		fb.Fallback = err.Error()
		return fb, nil
	}
	byID := make(map[string]Hit, len(in))
	for _, h := range in {
		byID[h.ID] = h
	}
	out := make([]Hit, 0, len(ids))
	for _, id := range ids {
		out = append(out, byID[id])
	}
	return Reranked{Hits: out, By: RerankLLM}, nil
}

// ask sends the prompt and checks the answer: JSON {"ids": [...]}, every
// id one of the hits shown, none twice, at least one; at most Out kept.
func (l *LLM) ask(ctx context.Context, q RerankQuery, hits []Hit) ([]string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Query: %s\n", q.Text)
	if len(q.Identifiers) > 0 {
		fmt.Fprintf(&b, "Identifiers named: %s\n", strings.Join(q.Identifiers, ", "))
	}
	b.WriteString("\nPassages:\n")
	for i, h := range hits {
		fmt.Fprintf(&b, "\n[%d] id: %s\ntitle: %s\n%s\n", i+1, h.ID, h.Title, clip(strings.Join(strings.Fields(h.Text), " "), l.cfg.MaxChars))
	}
	raw, err := l.cfg.Chat.CompleteJSON(ctx, fmt.Sprintf(llmRerankSystem, l.cfg.Out), b.String())
	if err != nil {
		return nil, fmt.Errorf("llm rerank: %w", err)
	}
	var ans struct {
		IDs []string `json:"ids"`
	}
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(stripFence(raw))))
	if err := dec.Decode(&ans); err != nil {
		return nil, fmt.Errorf("llm rerank: answer is not the JSON object {\"ids\": [...]}: %v", err)
	}
	if dec.More() {
		return nil, errors.New("llm rerank: answer has more than one JSON value")
	}
	known := make(map[string]bool, len(hits))
	for _, h := range hits {
		known[h.ID] = true
	}
	seen := map[string]bool{}
	for _, id := range ans.IDs {
		switch {
		case !known[id]:
			return nil, fmt.Errorf("llm rerank: answer names id %q, which was not among the %d passages", clip(id, 80), len(hits))
		case seen[id]:
			return nil, fmt.Errorf("llm rerank: answer names id %q twice", clip(id, 80))
		}
		seen[id] = true
	}
	if len(ans.IDs) == 0 {
		return nil, errors.New("llm rerank: answer names no ids")
	}
	return ans.IDs[:min(len(ans.IDs), l.cfg.Out)], nil
}

// stripFence removes a Markdown code fence around a JSON answer, which
// some models add even in JSON mode.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimPrefix(s, "json")
	return strings.TrimSuffix(strings.TrimSpace(s), "```")
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
