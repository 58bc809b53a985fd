package retrieval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors of document management.
var (
	// ErrNotFound: the tenant has no document of that id.
	ErrNotFound = errors.New("retrieval: document not found")
	// ErrUnsupported: the backend does not manage whole documents (it is
	// not a DocumentStore).
	ErrUnsupported = errors.New("retrieval: backend does not manage documents")
)

// DocumentInfo describes one indexed document, as listed.
type DocumentInfo struct {
	ID     string `json:"id"`
	Title  string `json:"title,omitempty"`
	Source string `json:"source,omitempty"`
	// Chunks is how many chunks the document has in the index.
	Chunks int `json:"chunks"`
	// Indexed is when the document's current chunks were last written
	// (the latest of its chunks' times), to the millisecond.
	Indexed time.Time `json:"indexed"`
}

// ListOptions pages a listing. Documents are listed in ID order
// (byte-wise); a page starts after the ID After ("" for the first page).
type ListOptions struct {
	After string `json:"after,omitempty"`
	// Limit is the page size; default 100, at most MaxListLimit.
	Limit int `json:"limit,omitempty"`
}

// MaxListLimit bounds ListOptions.Limit.
const MaxListLimit = 1000

// PageSize returns Limit, defaulted and bounded.
func (o ListOptions) PageSize() int {
	switch {
	case o.Limit <= 0:
		return 100
	case o.Limit > MaxListLimit:
		return MaxListLimit
	}
	return o.Limit
}

// DocumentPage is one page of a listing.
type DocumentPage struct {
	Documents []DocumentInfo `json:"documents"`
	// Next is the After of the next page; "" on the last page.
	Next string `json:"next,omitempty"`
	// Total is how many documents the tenant has.
	Total int `json:"total"`
}

// Version is one document's complete new set of chunks, for
// DocumentStore.ReplaceBatch.
type Version struct {
	DocID  string
	Chunks []Chunk
}

// DocumentStore is a Backend that also manages whole documents: it lists
// them, deletes them, and replaces all of a document's chunks at once.
// It is a separate interface so that read-only and test backends stay
// small Backends; the embedded and Vespa backends implement it, and
// callers reach it with AsDocumentStore. Implementations are safe for
// concurrent use.
type DocumentStore interface {
	Backend
	// Replace makes chunks the document's only chunks: every chunk of
	// docID not among them is removed. To a concurrent searcher the
	// change is atomic where the backend says so (embedded: always;
	// Vespa: see its package documentation): a search finds the old
	// version or the new one, never both and never neither. Each chunk's
	// DocID must be docID (an empty DocID is set to it); no chunks at
	// all deletes the document. An invalid chunk (no ID or text) rejects
	// the call before anything is written (ErrInvalidDocument).
	Replace(ctx context.Context, tenant, docID string, chunks []Chunk) error
	// ReplaceBatch is Replace for several documents in one call, each
	// atomic on its own; a backend may write them together (the embedded
	// one does, in one batch). A document must not appear twice.
	ReplaceBatch(ctx context.Context, tenant string, docs []Version) error
	// Delete removes every chunk of the document and reports how many
	// there were; a document with no chunks is ErrNotFound.
	Delete(ctx context.Context, tenant, docID string) (int, error)
	// Document describes one document, or returns ErrNotFound.
	Document(ctx context.Context, tenant, docID string) (DocumentInfo, error)
	// List returns one page of the tenant's documents in ID order.
	List(ctx context.Context, tenant string, opts ListOptions) (DocumentPage, error)
}

// AsDocumentStore returns b as a DocumentStore, or ErrUnsupported naming
// the backend.
func AsDocumentStore(b Backend) (DocumentStore, error) {
	if d, ok := b.(DocumentStore); ok {
		return d, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupported, b.Name())
}

// PrepareVersion checks one document's new chunks for Replace: an empty
// docID, a chunk without ID or text, a chunk of another document, or a
// chunk ID given twice is ErrInvalidDocument; an empty DocID is set to
// docID. It returns a copy; backends share it so they refuse alike.
func PrepareVersion(docID string, chunks []Chunk) ([]Chunk, error) {
	if docID == "" {
		return nil, fmt.Errorf("%w: empty document id", ErrInvalidDocument)
	}
	out := make([]Chunk, len(chunks))
	seen := make(map[string]bool, len(chunks))
	for i, c := range chunks {
		switch {
		case c.ID == "":
			return nil, fmt.Errorf("%w: chunk %d of %q has no id", ErrInvalidDocument, i, docID)
		case strings.TrimSpace(c.Text) == "":
			return nil, fmt.Errorf("%w: chunk %q has no text", ErrInvalidDocument, c.ID)
		case c.DocID != "" && c.DocID != docID:
			return nil, fmt.Errorf("%w: chunk %q belongs to document %q, not %q", ErrInvalidDocument, c.ID, c.DocID, docID)
		case seen[c.ID]:
			return nil, fmt.Errorf("%w: chunk %q given twice", ErrInvalidDocument, c.ID)
		}
		seen[c.ID] = true
		c.DocID = docID
		out[i] = c
	}
	return out, nil
}

// PrepareBatch is PrepareVersion for each version, and refuses a
// document given twice.
func PrepareBatch(docs []Version) ([]Version, error) {
	out := make([]Version, len(docs))
	seen := make(map[string]bool, len(docs))
	for i, v := range docs {
		if seen[v.DocID] {
			return nil, fmt.Errorf("%w: document %q given twice in one batch", ErrInvalidDocument, v.DocID)
		}
		seen[v.DocID] = true
		chunks, err := PrepareVersion(v.DocID, v.Chunks)
		if err != nil {
			return nil, err
		}
		out[i] = Version{DocID: v.DocID, Chunks: chunks}
	}
	return out, nil
}
