package vespa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentbus/agentbus/retrieval"
)

// feedDoc is a Document v1 put body: {"fields": {...}}.
type feedDoc struct {
	Fields feedFields `json:"fields"`
}

// feedFields are the schema's fields (schemas/vespa/schemas/*.sd).
type feedFields struct {
	ID     string `json:"id"`
	DocID  string `json:"doc_id"`
	Title  string `json:"title,omitempty"`
	Text   string `json:"text"`
	Source string `json:"source,omitempty"`
	// Metadata holds each value in its retrieval.MetadataString form, the
	// one metadata filters compare.
	Metadata map[string]string `json:"metadata,omitempty"`
	// MetadataJSON keeps the values' JSON types for the hits.
	MetadataJSON string `json:"metadata_json,omitempty"`
	// Date is epoch seconds (floor); absent when the chunk has no date.
	Date      *int64     `json:"date,omitempty"`
	Embedding denseValue `json:"embedding"`
	// Gen is the document version (see Replace); 0 from Index.
	Gen int64 `json:"gen"`
	// Indexed is when the chunk was fed, epoch milliseconds.
	Indexed int64 `json:"indexed"`
}

// denseValue is a dense tensor in Vespa's JSON short form {"values": [...]}.
type denseValue struct {
	Values []float32 `json:"values"`
}

// docError is Document v1's error body.
type docError struct {
	PathID  string `json:"pathId"`
	ID      string `json:"id"`
	Message string `json:"message"`
}

// Index feeds the chunks into tenant's document type, replacing any with
// the same ID. The whole batch is checked first (IDs and text present,
// vectors of one dimension) so a bad chunk writes nothing; chunks without
// a Vector are embedded with Config.Embedder. Chunks are then fed
// FeedConcurrency at a time; each failure is an *Error naming its chunk,
// and all of them are returned joined. A failed batch may be partly
// written: feeding it again is safe, since puts replace by ID.
func (b *Backend) Index(ctx context.Context, tenant string, chunks []retrieval.Chunk) error {
	doctype, err := b.DocType(tenant)
	if err != nil {
		return err
	}
	if len(chunks) == 0 {
		return nil
	}
	docs, err := b.prepare(ctx, chunks)
	if err != nil {
		return err
	}
	return b.feed(ctx, doctype, docs, 0)
}

// feed puts docs with generation gen, FeedConcurrency at a time, and
// returns every failure joined.
func (b *Backend) feed(ctx context.Context, doctype string, docs []feedDoc, gen int64) error {
	now := time.Now().UnixMilli()
	for i := range docs {
		docs[i].Fields.Gen, docs[i].Fields.Indexed = gen, now
	}
	errs := make([]error, len(docs))
	sem := make(chan struct{}, b.cfg.FeedConcurrency)
	var wg sync.WaitGroup
	for i := range docs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = fmt.Errorf("vespa: feed chunk %q: %w", docs[i].Fields.ID, ctx.Err())
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = b.put(ctx, doctype, docs[i])
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// prepare validates the batch and turns it into feed bodies.
func (b *Backend) prepare(ctx context.Context, chunks []retrieval.Chunk) ([]feedDoc, error) {
	var bad []error
	var missing []int
	for i, c := range chunks {
		switch {
		case c.ID == "":
			bad = append(bad, fmt.Errorf("%w: chunk %d has no id", retrieval.ErrInvalidDocument, i))
		case strings.TrimSpace(c.Text) == "":
			bad = append(bad, fmt.Errorf("%w: chunk %q has no text", retrieval.ErrInvalidDocument, c.ID))
		}
		if len(c.Vector) == 0 {
			missing = append(missing, i)
		}
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	vectors := make([][]float32, len(chunks))
	for i, c := range chunks {
		vectors[i] = c.Vector
	}
	if len(missing) > 0 {
		texts := make([]string, len(missing))
		for j, i := range missing {
			texts[j] = embedText(chunks[i])
		}
		got, err := b.cfg.Embedder.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("vespa: embedding %d chunks with %s: %w", len(texts), b.cfg.Embedder.Name(), err)
		}
		if len(got) != len(texts) {
			return nil, fmt.Errorf("vespa: embedder %s returned %d vectors for %d texts", b.cfg.Embedder.Name(), len(got), len(texts))
		}
		for j, i := range missing {
			vectors[i] = got[j]
		}
	}
	docs := make([]feedDoc, len(chunks))
	for i, c := range chunks {
		if len(vectors[i]) != len(vectors[0]) {
			return nil, fmt.Errorf("%w: chunk %q has a %d-dimensional vector, chunk %q %d", retrieval.ErrInvalidDocument,
				c.ID, len(vectors[i]), chunks[0].ID, len(vectors[0]))
		}
		f, err := fields(c, vectors[i])
		if err != nil {
			return nil, err
		}
		docs[i] = feedDoc{Fields: f}
	}
	return docs, nil
}

// embedText is what a chunk's embedding is computed from: its title, if
// any, and its text.
func embedText(c retrieval.Chunk) string {
	if c.Title == "" {
		return c.Text
	}
	return c.Title + "\n\n" + c.Text
}

func fields(c retrieval.Chunk, vector []float32) (feedFields, error) {
	f := feedFields{
		ID: c.ID, DocID: c.DocID, Title: c.Title, Text: c.Text, Source: c.Source,
		Embedding: denseValue{Values: vector},
	}
	if len(c.Metadata) > 0 {
		f.Metadata = make(map[string]string, len(c.Metadata))
		for k, v := range c.Metadata {
			f.Metadata[k] = retrieval.MetadataString(v)
		}
		raw, err := json.Marshal(c.Metadata)
		if err != nil {
			return feedFields{}, fmt.Errorf("%w: chunk %q metadata: %w", retrieval.ErrInvalidDocument, c.ID, err)
		}
		f.MetadataJSON = string(raw)
	}
	if !c.Date.IsZero() {
		s := c.Date.Unix()
		f.Date = &s
	}
	return f, nil
}

// docURL is the Document v1 URL of one chunk. The chunk ID is one
// path-escaped segment ('/', '#', '?' and the like included), as the
// API requires.
func (b *Backend) docURL(doctype, id string) string {
	return b.base + "/document/v1/" + b.cfg.Namespace + "/" + doctype + "/docid/" + url.PathEscape(id) +
		"?timeout=" + timeoutParam(b.cfg.Timeout)
}

func (b *Backend) put(ctx context.Context, doctype string, doc feedDoc) error {
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: chunk %q: %w", retrieval.ErrInvalidDocument, doc.Fields.ID, err)
	}
	r, err := b.do(ctx, http.MethodPost, b.docURL(doctype, doc.Fields.ID), body)
	if err != nil {
		return &feedTransportError{chunk: doc.Fields.ID, err: err}
	}
	if r.status == http.StatusOK {
		return nil
	}
	e := &Error{Op: "feed", DocType: doctype, ChunkID: doc.Fields.ID, Status: r.status}
	var de docError
	if json.Unmarshal(r.body, &de) == nil && de.Message != "" {
		e.Message = de.Message
	} else {
		e.Message = snippet(r.body)
	}
	return e
}

// feedTransportError is a feed that got no HTTP answer (connection
// refused, context ended); it names the chunk and wraps both ErrFeed and
// the cause.
type feedTransportError struct {
	chunk string
	err   error
}

func (e *feedTransportError) Error() string {
	return fmt.Sprintf("vespa: feed chunk %q: %v", e.chunk, e.err)
}

func (e *feedTransportError) Unwrap() []error { return []error{ErrFeed, e.err} }
