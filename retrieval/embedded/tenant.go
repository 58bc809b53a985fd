package embedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/coder/hnsw"

	"github.com/agentbus/agentbus/llm"
)

// tenant is one tenant's open index. mu guards everything below it: Index
// and Close take it for writing, Search and Count for reading.
type tenant struct {
	dir string
	cfg Config

	mu          sync.RWMutex
	closed      bool
	text        bleve.Index
	recs        map[string]record
	docs        map[string]map[string]struct{} // document id → its chunk ids
	graph       *hnsw.Graph[string]
	dim         int    // the dimension of every stored vector; 0 before the first
	nextGen     uint64 // the next VecKey generation
	dead        int    // graph nodes no record points at any more
	graphOnDisk bool   // vectors.hnsw matches the graph; removed before any change
	logged      int    // records appended to chunks.log since the store was written
	// emb embeds this tenant's chunks and queries: cfg.Embedder, or with
	// cfg.LSA the tenant's own model once trained (see lsa.go).
	emb llm.Embedder
	// failedOn is the chunk count at which the last training failed.
	failedOn int
}

func openTenant(ctx context.Context, dir string, cfg Config) (*tenant, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s, logged, err := loadStore(dir)
	if err != nil {
		return nil, err
	}
	t := &tenant{dir: dir, cfg: cfg, recs: make(map[string]record, len(s.Records)), nextGen: s.NextGen,
		docs: map[string]map[string]struct{}{}, emb: cfg.Embedder}
	if cfg.LSA != nil {
		if m, err := loadModel(dir); err == nil {
			t.emb = m
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	for _, r := range s.Records {
		t.recs[r.ID] = r
		t.link(r)
	}
	if t.text, err = openBleve(filepath.Join(dir, bleveName)); err != nil {
		return nil, err
	}
	var err2 error
	if cfg.LSA != nil && s.Embedder != t.emb.Name() && len(t.recs) >= minTrain(*cfg.LSA) {
		err2 = t.train(ctx) // a model that does not match the vectors, or none
	} else if s.Embedder != "" && s.Embedder != t.emb.Name() && len(t.recs) > 0 {
		err2 = t.reembed(ctx)
	} else if t.loadGraph() || logged > 0 {
		// The rebuilt graph gave some records new keys, or the log's
		// batches are folded into the store.
		err2 = t.save()
	}
	if err2 != nil {
		_ = t.text.Close()
		return nil, err2
	}
	for _, r := range t.recs {
		if len(r.Vector) > 0 {
			t.dim = len(r.Vector)
			break
		}
	}
	return t, nil
}

// reembed re-embeds every chunk with the configured embedder, which is not
// the one the stored vectors came from, and rebuilds the graph.
func (t *tenant) reembed(ctx context.Context) error {
	ids := make([]string, 0, len(t.recs))
	texts := make([]string, 0, len(t.recs))
	for id, r := range t.recs {
		ids = append(ids, id)
		texts = append(texts, embedText(r.Title, r.Text))
	}
	vecs, err := t.emb.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("re-embed %d chunks with %s: %w", len(texts), t.emb.Name(), err)
	}
	if len(vecs) != len(texts) {
		return fmt.Errorf("re-embed: embedder %s returned %d vectors for %d chunks", t.emb.Name(), len(vecs), len(texts))
	}
	for i, id := range ids {
		r := t.recs[id]
		r.Vector, r.VecKey = vecs[i], ""
		t.recs[id] = r
	}
	if err := removeIfExists(filepath.Join(t.dir, graphName)); err != nil {
		return err
	}
	t.rebuildGraph()
	return t.save()
}

// put adds or replaces records in both profiles and saves the store.
func (t *tenant) put(recs []record) error {
	return t.writeFunc(func() ([]record, []string) { return recs, nil })
}

// writeFunc takes the write lock and asks plan, under it, which records
// to add or replace and which chunk IDs to delete (those not present are
// ignored); it then applies both to both profiles in one bleve batch and
// logs them in one frame: searchers, which take the read lock, see all
// of it or none of it, and so does a reopened index.
func (t *tenant) writeFunc(plan func() (recs []record, deleted []string)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	recs, deleted := plan()
	if len(recs) == 0 && len(deleted) == 0 {
		return nil
	}
	if t.cfg.LSA != nil {
		if err := t.embedRecords(recs); err != nil {
			return err
		}
	}
	dim := t.dim
	for _, r := range recs {
		if len(r.Vector) == 0 {
			continue
		}
		if dim == 0 {
			dim = len(r.Vector)
		}
		if len(r.Vector) != dim {
			return fmt.Errorf("embedded: chunk %q has a vector of dimension %d, the index has %d (did the embedder change?)", r.ID, len(r.Vector), dim)
		}
	}
	deleted = slices.DeleteFunc(slices.Clone(deleted), func(id string) bool { _, ok := t.recs[id]; return !ok })
	batch := t.text.NewBatch()
	for _, id := range deleted {
		batch.Delete(id)
	}
	for _, r := range recs {
		if err := batch.Index(r.ID, bleveDoc(r)); err != nil {
			return fmt.Errorf("embedded: index chunk %q: %w", r.ID, err)
		}
	}
	if err := t.text.Batch(batch); err != nil {
		return fmt.Errorf("embedded: write bm25 index: %w", err)
	}
	if t.graphOnDisk {
		if err := removeIfExists(filepath.Join(t.dir, graphName)); err != nil {
			return fmt.Errorf("embedded: %w", err)
		}
		t.graphOnDisk = false
	}
	t.dim = dim
	for _, id := range deleted {
		old := t.recs[id]
		if old.VecKey != "" {
			t.dead++
		}
		t.unlink(old)
		delete(t.recs, id)
	}
	for i := range recs {
		t.putVector(&recs[i])
		if old, ok := t.recs[recs[i].ID]; ok {
			t.unlink(old)
		}
		t.recs[recs[i].ID] = recs[i]
		t.link(recs[i])
	}
	var err error
	switch {
	case t.dead > 64 && t.dead > t.graph.Len()/4:
		t.rebuildGraph() // new keys for every record: write the whole store
		err = t.save()
	case t.logged+len(recs)+len(deleted) > len(t.recs):
		err = t.save() // the log would hold more than the store: fold it in
	default:
		if err = appendLog(t.dir, logEntry{Embedder: t.emb.Name(), NextGen: t.nextGen, Deleted: deleted, Records: recs}); err == nil {
			t.logged += len(recs) + len(deleted)
		}
	}
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	return nil
}

// link and unlink keep t.docs in step with t.recs.
func (t *tenant) link(r record) {
	ids := t.docs[r.DocID]
	if ids == nil {
		ids = map[string]struct{}{}
		t.docs[r.DocID] = ids
	}
	ids[r.ID] = struct{}{}
}

func (t *tenant) unlink(r record) {
	if ids := t.docs[r.DocID]; ids != nil {
		delete(ids, r.ID)
		if len(ids) == 0 {
			delete(t.docs, r.DocID)
		}
	}
}

// save writes every record to the store and empties the log.
func (t *tenant) save() error {
	s := storeFile{Version: storeFormat, Embedder: t.emb.Name(), NextGen: t.nextGen, Records: make([]record, 0, len(t.recs))}
	for _, r := range t.recs {
		s.Records = append(s.Records, r)
	}
	if err := saveStore(t.dir, s); err != nil {
		return err
	}
	t.logged = 0
	return nil
}

func (t *tenant) count() (int, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return 0, ErrClosed
	}
	return len(t.recs), nil
}

// close exports the graph and closes the bleve index.
func (t *tenant) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	if t.logged > 0 {
		if err := t.save(); err != nil {
			errs = append(errs, fmt.Errorf("embedded: save chunks of %s: %w", filepath.Base(t.dir), err))
		}
	}
	if !t.graphOnDisk && t.graph.Len() > 0 {
		if err := t.saveGraph(); err != nil {
			errs = append(errs, fmt.Errorf("embedded: save vectors of %s: %w", filepath.Base(t.dir), err))
		}
	}
	if err := t.text.Close(); err != nil {
		errs = append(errs, fmt.Errorf("embedded: close bm25 index of %s: %w", filepath.Base(t.dir), err))
	}
	return errors.Join(errs...)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
