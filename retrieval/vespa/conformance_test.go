package vespa_test

import (
	"testing"
	"time"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/retrievaltest"
	"github.com/agentbus/agentbus/retrieval/vespa"
	"github.com/agentbus/agentbus/retrieval/vespa/vespatest"
)

// newBackend is a Backend on a fresh fake Vespa, retrying quickly.
func newBackend(t *testing.T, mutate ...func(*vespa.Config)) (*vespa.Backend, *vespatest.Server) {
	t.Helper()
	srv := vespatest.New(t)
	cfg := vespa.Config{URL: srv.URL, RetryBackoff: time.Millisecond, Timeout: 5 * time.Second}
	for _, m := range mutate {
		m(&cfg)
	}
	b, err := vespa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, srv
}

func TestConformance(t *testing.T) {
	retrievaltest.Run(t, func(t *testing.T) retrieval.Backend {
		b, _ := newBackend(t)
		return b
	})
}

func TestDocumentsConformance(t *testing.T) {
	retrievaltest.RunDocuments(t, func(t *testing.T) retrieval.DocumentStore {
		b, _ := newBackend(t)
		return b
	})
}
