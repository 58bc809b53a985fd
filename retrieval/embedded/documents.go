package embedded

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/agentbus/agentbus/retrieval"
)

// Replace makes chunks the document's only chunks, atomically: the old
// chunks' removal and the new chunks' writing are one bleve batch and one
// log frame, applied under the tenant's write lock, so a concurrent
// search sees the old version or the new one, never both or neither.
// The new chunks are embedded before the lock is taken.
func (ix *Index) Replace(ctx context.Context, tenantID, docID string, chunks []retrieval.Chunk) error {
	return ix.ReplaceBatch(ctx, tenantID, []retrieval.Version{{DocID: docID, Chunks: chunks}})
}

// ReplaceBatch replaces several documents in one batch (one lock, one
// bleve batch, one log frame): all of them change at once.
func (ix *Index) ReplaceBatch(ctx context.Context, tenantID string, docs []retrieval.Version) error {
	if err := validTenant(tenantID); err != nil {
		return err
	}
	docs, err := retrieval.PrepareBatch(docs)
	if err != nil {
		return err
	}
	var all []retrieval.Chunk
	for _, v := range docs {
		all = append(all, v.Chunks...)
	}
	recs, err := ix.records(ctx, all)
	if err != nil {
		return err
	}
	ids := make([]string, len(docs))
	for i, v := range docs {
		ids[i] = v.DocID
	}
	t, err := ix.tenant(ctx, tenantID, len(all) > 0)
	if err != nil || t == nil {
		return err // nil: nothing to write into a tenant that does not exist
	}
	if err := t.replace(ids, recs); err != nil {
		return err
	}
	return t.maybeTrain(ctx)
}

// Delete removes every chunk of the document.
func (ix *Index) Delete(ctx context.Context, tenantID, docID string) (int, error) {
	if err := validTenant(tenantID); err != nil {
		return 0, err
	}
	t, err := ix.tenant(ctx, tenantID, false)
	if err != nil {
		return 0, err
	}
	if t == nil {
		return 0, fmt.Errorf("%w: %q in tenant %s", retrieval.ErrNotFound, docID, tenantID)
	}
	n, err := t.remove(docID)
	if err == nil && n == 0 {
		err = fmt.Errorf("%w: %q in tenant %s", retrieval.ErrNotFound, docID, tenantID)
	}
	return n, err
}

// Document describes one document.
func (ix *Index) Document(ctx context.Context, tenantID, docID string) (retrieval.DocumentInfo, error) {
	if err := validTenant(tenantID); err != nil {
		return retrieval.DocumentInfo{}, err
	}
	t, err := ix.tenant(ctx, tenantID, false)
	if err != nil {
		return retrieval.DocumentInfo{}, err
	}
	if t != nil {
		t.mu.RLock()
		defer t.mu.RUnlock()
		if t.closed {
			return retrieval.DocumentInfo{}, ErrClosed
		}
		if ids, ok := t.docs[docID]; ok {
			return t.info(docID, ids), nil
		}
	}
	return retrieval.DocumentInfo{}, fmt.Errorf("%w: %q in tenant %s", retrieval.ErrNotFound, docID, tenantID)
}

// List returns a page of the tenant's documents in ID order. It sorts
// the tenant's document ids on each call: fine for the hundreds of
// thousands of documents one machine holds.
func (ix *Index) List(ctx context.Context, tenantID string, opts retrieval.ListOptions) (retrieval.DocumentPage, error) {
	if err := validTenant(tenantID); err != nil {
		return retrieval.DocumentPage{}, err
	}
	page := retrieval.DocumentPage{Documents: []retrieval.DocumentInfo{}}
	t, err := ix.tenant(ctx, tenantID, false)
	if err != nil || t == nil {
		return page, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return page, ErrClosed
	}
	ids := slices.Sorted(maps.Keys(t.docs))
	page.Total = len(ids)
	i := sort.SearchStrings(ids, opts.After)
	if i < len(ids) && ids[i] == opts.After && opts.After != "" {
		i++
	}
	n := opts.PageSize()
	for _, id := range ids[i:min(len(ids), i+n)] {
		page.Documents = append(page.Documents, t.info(id, t.docs[id]))
	}
	if i+n < len(ids) {
		page.Next = ids[i+n-1]
	}
	return page, nil
}

// replace removes every chunk of the documents docIDs that recs do not
// replace, and writes recs, in one write.
func (t *tenant) replace(docIDs []string, recs []record) error {
	return t.writeFunc(func() ([]record, []string) {
		keep := make(map[string]bool, len(recs))
		for _, r := range recs {
			keep[r.ID] = true
		}
		var gone []string
		for _, d := range docIDs {
			for id := range t.docs[d] {
				if !keep[id] {
					gone = append(gone, id)
				}
			}
		}
		// A chunk ID may move between documents: the chunk it replaces
		// leaves its old document, which link/unlink handle.
		slices.Sort(gone) // a deterministic log
		return recs, gone
	})
}

// remove deletes a document's chunks and reports how many there were.
func (t *tenant) remove(docID string) (int, error) {
	var n int
	err := t.writeFunc(func() ([]record, []string) {
		ids := slices.Sorted(maps.Keys(t.docs[docID]))
		n = len(ids)
		return nil, ids
	})
	return n, err
}

// info describes a document from its chunks; the caller holds t.mu.
func (t *tenant) info(docID string, ids map[string]struct{}) retrieval.DocumentInfo {
	d := retrieval.DocumentInfo{ID: docID, Chunks: len(ids)}
	first := ""
	for id := range ids {
		r := t.recs[id]
		if r.Indexed.After(d.Indexed) {
			d.Indexed = r.Indexed
		}
		// Title and source from the first chunk in ID order ("#0" sorts
		// before "#1"), the one that opens the document.
		if first == "" || chunkLess(id, first) {
			first = id
		}
	}
	if r, ok := t.recs[first]; ok {
		d.Title, d.Source = r.Title, r.Source
		if head, _, ok := strings.Cut(d.Title, retrieval.TitleSeparator); ok {
			d.Title = head
		}
	}
	return d
}

// chunkLess orders "<doc>#<n>" ids by n when both have one, else by bytes.
func chunkLess(a, b string) bool {
	ia, ib := strings.LastIndexByte(a, '#'), strings.LastIndexByte(b, '#')
	if ia >= 0 && ib >= 0 && a[:ia] == b[:ib] {
		na, nb := a[ia+1:], b[ib+1:]
		if len(na) != len(nb) {
			return len(na) < len(nb)
		}
		return na < nb
	}
	return a < b
}
