package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbus/agentbus/llm"
)

// modelName is the tenant's LSA model (Config.LSA), beside its chunks.
const modelName = "lsa.model"

// minTrain is how many chunks a tenant needs before its first training:
// four per dimension, so that the factorisation has something to find.
func minTrain(cfg llm.LSAConfig) int { return 4 * cfg.Dim }

func loadModel(dir string) (*llm.LSA, error) {
	b, err := os.ReadFile(filepath.Join(dir, modelName))
	if err != nil {
		return nil, err
	}
	return llm.ReadLSA(bytes.NewReader(b))
}

// embedder is the embedder of this tenant's vectors, for a query.
func (t *tenant) embedder() llm.Embedder {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.emb
}

// embedRecords embeds recs with the tenant's current embedder; the caller
// holds the write lock, so that no training swaps the model between the
// vectors and the write.
func (t *tenant) embedRecords(recs []record) error {
	texts := make([]string, len(recs))
	for i, r := range recs {
		texts[i] = embedText(r.Title, r.Text)
	}
	vecs, err := t.emb.Embed(context.Background(), texts) // local and in memory: nothing to cancel
	if err != nil || len(vecs) != len(recs) {
		return fmt.Errorf("embedded: embed %d chunks with %s: %d vectors, %v", len(recs), t.emb.Name(), len(vecs), err)
	}
	for i := range recs {
		recs[i].Vector = vecs[i]
	}
	return nil
}

// maybeTrain trains the tenant's model (Config.LSA) when the tenant has
// reached minTrain chunks without one, or has grown by half since the
// model was trained: a tenant growing to n chunks pays at most about three
// trainings on n, and its model has seen at least two thirds of it.
func (t *tenant) maybeTrain(ctx context.Context) error {
	if t.cfg.LSA == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	n := len(t.recs)
	last := t.failedOn // a training that failed waits for the tenant to grow, like one that succeeded
	if m, ok := t.emb.(*llm.LSA); ok {
		last = max(last, m.TrainedOn())
	}
	if n < minTrain(*t.cfg.LSA) || (last > 0 && 2*n < 3*last) {
		return nil
	}
	if err := t.train(ctx); err != nil {
		if !errors.Is(err, llm.ErrLSA) {
			return err
		}
		// Too few distinct words for the dimension: the vectors stay as
		// they are (the hashing embedder's, or the last model's).
		t.failedOn = n
	}
	return nil
}

// train learns a model from every chunk, re-embeds them all with it,
// rebuilds the graph and saves the store and the model. The caller holds
// the write lock (or is opening the tenant).
func (t *tenant) train(ctx context.Context) error {
	texts := make([]string, 0, len(t.recs))
	for _, r := range t.recs {
		texts = append(texts, embedText(r.Title, r.Text))
	}
	m, err := llm.TrainLSA(ctx, texts, *t.cfg.LSA)
	if err != nil {
		return fmt.Errorf("embedded: train the vector model: %w", err)
	}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		return fmt.Errorf("embedded: save the vector model: %w", err)
	}
	if err := writeAtomic(filepath.Join(t.dir, modelName), buf.Bytes()); err != nil {
		return fmt.Errorf("embedded: save the vector model: %w", err)
	}
	t.emb = m
	if err := t.reembed(ctx); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	t.graphOnDisk = false
	return nil
}
