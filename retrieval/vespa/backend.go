package vespa

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbus/agentbus/retrieval"
)

// Rank profiles of the application package (schemas/vespa), by the
// retrieval profile they serve.
const (
	// RankBM25 ranks retrieval.ProfileBM25: bm25(title) + bm25(text).
	RankBM25 = "bm25"
	// RankSemantic ranks retrieval.ProfileVector: closeness(field, embedding).
	RankSemantic = "semantic"
)

// Backend is a retrieval.DocumentStore on a Vespa cluster. It holds no
// state besides its configuration, the last document generation it used
// and per-document locks, and is safe for concurrent use.
type Backend struct {
	cfg  Config
	base string // URL without a trailing slash
	host string

	lastGen  atomic.Int64             // the last generation Replace used
	docLocks [docLockCount]sync.Mutex // serialise Replace and Delete per document
}

var _ retrieval.Backend = (*Backend)(nil)

// New checks cfg (defaults filled in) and returns a Backend. It does not
// contact Vespa: the first Index, Search or Count does.
func New(cfg Config) (*Backend, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.URL) // Validate parsed it
	return &Backend{cfg: cfg, base: strings.TrimRight(cfg.URL, "/"), host: u.Host}, nil
}

// Name is "vespa at <host> (<embedder name>)".
func (b *Backend) Name() string {
	return fmt.Sprintf("vespa at %s (%s)", b.host, b.cfg.Embedder.Name())
}

// Profiles is [bm25 vector]: BM25 full text first.
func (b *Backend) Profiles() []string {
	return []string{retrieval.ProfileBM25, retrieval.ProfileVector}
}

// Close releases nothing: the HTTP client's idle connections belong to
// whoever supplied it. It is safe to call more than once.
func (b *Backend) Close() error { return nil }

// DocType is the document type holding tenant's chunks under this
// backend's Schema prefix (see the package-level DocType).
func (b *Backend) DocType(tenant string) (string, error) {
	return DocType(b.cfg.Schema, tenant)
}

// timeoutParam is a duration as Vespa's timeout parameters take it.
func timeoutParam(d time.Duration) string {
	return fmt.Sprintf("%dms", max(d.Milliseconds(), 1))
}
