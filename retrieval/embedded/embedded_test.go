package embedded_test

import (
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/retrievaltest"
)

func open(t *testing.T, dir string) *embedded.Index {
	t.Helper()
	ix, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	return ix
}

func TestConformance(t *testing.T) {
	retrievaltest.Run(t, func(t *testing.T) retrieval.Backend { return open(t, t.TempDir()) })
}

func TestDocumentsConformance(t *testing.T) {
	retrievaltest.RunDocuments(t, func(t *testing.T) retrieval.DocumentStore { return open(t, t.TempDir()) })
}
