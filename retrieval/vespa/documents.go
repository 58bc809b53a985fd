package vespa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbus/agentbus/retrieval"
)

var _ retrieval.DocumentStore = (*Backend)(nil)

// Replace makes chunks the document's only chunks. Vespa has no
// transaction over several documents, so Replace orders its writes so
// that a searcher never sees neither version, and searches hide the
// overlap: the new chunks are fed with a new generation (gen, increasing
// per Backend) — a chunk ID both versions have is overwritten in place,
// which Vespa applies atomically per document — and only once every put
// is acknowledged are the document's chunks of other generations removed
// by selection. Until then both generations are stored; Search keeps,
// per document, only the hits of the newest generation among its hits,
// so one result list never mixes versions. What Vespa cannot give: two
// searches during the window may see different versions (one finds an
// old chunk whose new counterpart did not match), and a result may hold
// fewer than K hits while old chunks are being removed. If a put fails,
// Replace stops before removing anything: the old version's chunks that
// were not overwritten remain, hidden wherever a new chunk also matches;
// calling Replace again converges. Replaces of one document through one
// Backend are serialised; through two Backends (two processes) the later
// generation wins once both have finished.
func (b *Backend) Replace(ctx context.Context, tenant, docID string, chunks []retrieval.Chunk) error {
	doctype, err := b.DocType(tenant)
	if err != nil {
		return err
	}
	chunks, err = retrieval.PrepareVersion(docID, chunks)
	if err != nil {
		return err
	}
	var docs []feedDoc
	if len(chunks) > 0 {
		if docs, err = b.prepare(ctx, chunks); err != nil {
			return err
		}
	}
	mu := &b.docLocks[lockIndex(tenant, docID)]
	mu.Lock()
	defer mu.Unlock()
	gen := b.nextGen()
	if err := b.feed(ctx, doctype, docs, gen); err != nil {
		return err
	}
	sel, err := selection(doctype, docID, gen)
	if err != nil {
		return err
	}
	_, err = b.removeWhere(ctx, doctype, sel)
	return err
}

// ReplaceBatch replaces the documents as Replace does, FeedConcurrency
// documents at a time (each document's puts are themselves concurrent),
// and returns every document's failure joined; the documents that did
// not fail are replaced.
func (b *Backend) ReplaceBatch(ctx context.Context, tenant string, docs []retrieval.Version) error {
	if _, err := b.DocType(tenant); err != nil {
		return err
	}
	docs, err := retrieval.PrepareBatch(docs)
	if err != nil {
		return err
	}
	errs := make([]error, len(docs))
	sem := make(chan struct{}, b.cfg.FeedConcurrency)
	var wg sync.WaitGroup
	for i, v := range docs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = fmt.Errorf("vespa: replace document %q: %w", v.DocID, ctx.Err())
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := b.Replace(ctx, tenant, v.DocID, v.Chunks); err != nil {
				errs[i] = fmt.Errorf("vespa: replace document %q: %w", v.DocID, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Delete removes every chunk of the document: a visit counts them, then
// Document v1's DELETE with a selection removes them (following its
// continuation tokens until the whole content cluster is done).
func (b *Backend) Delete(ctx context.Context, tenant, docID string) (int, error) {
	doctype, err := b.DocType(tenant)
	if err != nil {
		return 0, err
	}
	info, err := b.Document(ctx, tenant, docID)
	if err != nil {
		return 0, err
	}
	mu := &b.docLocks[lockIndex(tenant, docID)]
	mu.Lock()
	defer mu.Unlock()
	sel, err := selection(doctype, docID, -1)
	if err != nil {
		return 0, err
	}
	if _, err := b.removeWhere(ctx, doctype, sel); err != nil {
		return 0, err
	}
	return info.Chunks, nil
}

// Document describes one document by visiting its chunks (selection on
// doc_id). While a Replace is under way it counts the newest generation
// only.
func (b *Backend) Document(ctx context.Context, tenant, docID string) (retrieval.DocumentInfo, error) {
	doctype, err := b.DocType(tenant)
	if err != nil {
		return retrieval.DocumentInfo{}, err
	}
	sel, err := selection(doctype, docID, -1)
	if err != nil {
		return retrieval.DocumentInfo{}, err
	}
	infos, err := b.visit(ctx, doctype, sel)
	if err != nil {
		return retrieval.DocumentInfo{}, err
	}
	if len(infos) == 0 {
		return retrieval.DocumentInfo{}, fmt.Errorf("%w: %q in tenant %s", retrieval.ErrNotFound, docID, tenant)
	}
	return infos[0], nil
}

// List visits every chunk of the tenant (their doc_id, title, source,
// gen and indexed fields only) and pages the documents they make up in
// memory. That costs a pass over the tenant's chunks per call — fine for
// tens of thousands of chunks; a grouping query would scale further and
// is not written yet.
func (b *Backend) List(ctx context.Context, tenant string, opts retrieval.ListOptions) (retrieval.DocumentPage, error) {
	doctype, err := b.DocType(tenant)
	if err != nil {
		return retrieval.DocumentPage{}, err
	}
	infos, err := b.visit(ctx, doctype, doctype)
	if err != nil {
		return retrieval.DocumentPage{}, err
	}
	page := retrieval.DocumentPage{Documents: []retrieval.DocumentInfo{}, Total: len(infos)}
	i := sort.Search(len(infos), func(i int) bool { return infos[i].ID > opts.After })
	n := opts.PageSize()
	page.Documents = append(page.Documents, infos[i:min(len(infos), i+n)]...)
	if i+n < len(infos) {
		page.Next = infos[i+n-1].ID
	}
	return page, nil
}

// nextGen is a generation above every earlier one of this Backend and,
// being the time in microseconds, above those of Backends that ran
// before (microseconds, not nanoseconds, so that a generation stays
// exact in a JSON reader that reads numbers as float64).
func (b *Backend) nextGen() int64 {
	for {
		last := b.lastGen.Load()
		g := max(time.Now().UnixMicro(), last+1)
		if b.lastGen.CompareAndSwap(last, g) {
			return g
		}
	}
}

// docLockCount stripes the per-document replace locks.
const docLockCount = 64

func lockIndex(tenant, docID string) int {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(docID))
	return int(h.Sum32() % docLockCount)
}

// selection is a Document v1 document selection for the chunks of docID
// in doctype, less those of generation keep when keep >= 0.
func selection(doctype, docID string, keep int64) (string, error) {
	lit, err := selectionString(docID)
	if err != nil {
		return "", fmt.Errorf("%w: document id %q: %w", retrieval.ErrInvalidDocument, docID, err)
	}
	sel := doctype + ".doc_id==" + lit
	if keep >= 0 {
		sel += " and " + doctype + ".gen!=" + strconv.FormatInt(keep, 10)
	}
	return sel, nil
}

// selectionString quotes s as a document selection string literal. The
// selection language escapes strings as YQL does ('\' and '"'
// backslash-escaped), so this is yqlString, which also refuses control
// characters and invalid UTF-8.
func selectionString(s string) (string, error) { return yqlString(s) }

// collectionURL is Document v1's URL for a selection over doctype.
func (b *Backend) collectionURL(doctype string, q url.Values) string {
	q.Set("cluster", b.cfg.Cluster)
	q.Set("timeout", timeoutParam(b.cfg.Timeout))
	return b.base + "/document/v1/" + b.cfg.Namespace + "/" + doctype + "/docid?" + q.Encode()
}

// visitAnswer is Document v1's answer to a visit or a selection delete.
type visitAnswer struct {
	Documents []struct {
		ID     string         `json:"id"`
		Fields map[string]any `json:"fields"`
	} `json:"documents"`
	DocumentCount int    `json:"documentCount"`
	Continuation  string `json:"continuation"`
	Message       string `json:"message"`
}

// maxPasses bounds the continuation rounds of one visit or delete.
const maxPasses = 100_000

// pages runs a visit or selection delete to its end, handing each
// answer to each.
func (b *Backend) pages(ctx context.Context, op, method, doctype string, q url.Values, each func(visitAnswer)) error {
	for pass := 0; pass < maxPasses; pass++ {
		r, err := b.do(ctx, method, b.collectionURL(doctype, q), nil)
		if err != nil {
			return fmt.Errorf("%w: %s (%s): %w", errFor(op), op, doctype, err)
		}
		var a visitAnswer
		if jerr := json.Unmarshal(r.body, &a); jerr != nil && r.status == http.StatusOK {
			return fmt.Errorf("%w: %s (%s): %w: %s", ErrResponse, op, doctype, jerr, snippet(r.body))
		}
		if r.status != http.StatusOK {
			msg := a.Message
			if msg == "" {
				msg = snippet(r.body)
			}
			return &Error{Op: op, DocType: doctype, Status: r.status, Message: msg}
		}
		each(a)
		if a.Continuation == "" {
			return nil
		}
		q.Set("continuation", a.Continuation)
	}
	return fmt.Errorf("%w: %s (%s): no end after %d continuations", ErrResponse, op, doctype, maxPasses)
}

func errFor(op string) error {
	if op == "delete" {
		return ErrFeed
	}
	return ErrQuery
}

// removeWhere deletes the documents matching sel and reports how many
// Vespa says it removed.
func (b *Backend) removeWhere(ctx context.Context, doctype, sel string) (int, error) {
	n := 0
	err := b.pages(ctx, "delete", http.MethodDelete, doctype, url.Values{"selection": {sel}}, func(a visitAnswer) {
		n += a.DocumentCount
	})
	return n, err
}

// visit reads the chunks matching sel and sums them up per document, in
// document ID order, counting each document's newest generation only.
func (b *Backend) visit(ctx context.Context, doctype, sel string) ([]retrieval.DocumentInfo, error) {
	type doc struct {
		info     retrieval.DocumentInfo
		gen      int64
		firstIdx int // the lowest "#n" seen, for title and source
	}
	docs := map[string]*doc{}
	q := url.Values{
		"selection":           {sel},
		"wantedDocumentCount": {"1000"},
		"fieldSet":            {doctype + ":doc_id,title,source,gen,indexed"},
	}
	err := b.pages(ctx, "visit", http.MethodGet, doctype, q, func(a visitAnswer) {
		for _, d := range a.Documents {
			id, _ := d.Fields["doc_id"].(string)
			gen := int64(num(d.Fields["gen"]))
			chunk := d.ID
			if _, user, ok := strings.Cut(d.ID, "::"); ok {
				chunk = user
			}
			idx := chunkIndex(chunk)
			cur := docs[id]
			if cur == nil || gen > cur.gen {
				cur = &doc{info: retrieval.DocumentInfo{ID: id}, gen: gen, firstIdx: -1}
				docs[id] = cur
			} else if gen < cur.gen {
				continue
			}
			cur.info.Chunks++
			if t := time.UnixMilli(int64(num(d.Fields["indexed"]))).UTC(); t.After(cur.info.Indexed) {
				cur.info.Indexed = t
			}
			if cur.firstIdx < 0 || idx < cur.firstIdx {
				cur.firstIdx = idx
				cur.info.Title, _ = d.Fields["title"].(string)
				cur.info.Source, _ = d.Fields["source"].(string)
				if head, _, ok := strings.Cut(cur.info.Title, retrieval.TitleSeparator); ok {
					cur.info.Title = head
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]retrieval.DocumentInfo, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.info)
	}
	slices.SortFunc(out, func(a, b retrieval.DocumentInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// chunkIndex is n of "<doc>#<n>", or a large number when there is none.
func chunkIndex(id string) int {
	if i := strings.LastIndexByte(id, '#'); i >= 0 {
		if n, err := strconv.Atoi(id[i+1:]); err == nil {
			return n
		}
	}
	return 1 << 30
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// newestOnly drops each hit whose document has, among these hits, one of
// a newer generation: while Replace is under way both are stored, and a
// result list shows one version of a document.
func newestOnly(hits []retrieval.Hit, gens []int64) []retrieval.Hit {
	if len(gens) != len(hits) {
		return hits
	}
	newest := map[string]int64{}
	for i, h := range hits {
		if g, ok := newest[h.DocID]; !ok || gens[i] > g {
			newest[h.DocID] = gens[i]
		}
	}
	out := hits[:0]
	for i, h := range hits {
		if gens[i] == newest[h.DocID] {
			out = append(out, h)
		}
	}
	return out
}
