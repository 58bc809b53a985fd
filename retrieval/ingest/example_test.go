package ingest_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/ingest"
	"github.com/agentbus/agentbus/retrieval/ingest/ingesttest"
)

// Upload files in memory, find a fact with its citation, list the
// tenant's documents and delete one — what an HTTP upload handler does.
func ExampleIngester_Files() {
	dir, _ := os.MkdirTemp("", "ingest-example")
	defer os.RemoveAll(dir)
	ix, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	ctx := context.Background()

	in, _ := ingest.New(ingest.Config{Backend: ix, Tenant: "acme"})
	sum, err := in.Files(ctx,
		ingest.File{Name: "handbook.pdf", Data: ingesttest.PDF("Welcome.", "Parking is on level minus two.")},
		ingest.File{Name: "rota.csv", Data: []byte("day,on call\nMonday,Ada\nTuesday,Grace\n")},
		ingest.File{Name: "broken.docx", Data: []byte("PK\x03\x04 not really")},
	)
	if err != nil {
		panic(err) // the backend or the context failed: nothing per file
	}
	fmt.Println("documents:", sum.Documents, "chunks:", sum.Chunks)
	for _, p := range sum.Errors {
		fmt.Printf("problem: %s [%s]\n", p, p.Code)
	}

	hits, _ := ix.Search(ctx, "acme", retrieval.ProfileBM25, retrieval.Query{Text: "parking level", K: 1})
	fmt.Printf("found in %s page %v\n", hits[0].DocID, hits[0].Metadata["page"])

	store, _ := retrieval.AsDocumentStore(ix)
	page, _ := store.List(ctx, "acme", retrieval.ListOptions{Limit: 10})
	for _, d := range page.Documents {
		fmt.Printf("%s: %d chunks\n", d.ID, d.Chunks)
	}
	n, _ := store.Delete(ctx, "acme", "handbook.pdf")
	fmt.Println("deleted chunks:", n)
	// Output:
	// documents: 2 chunks: 3
	// problem: broken.docx: not a readable zip archive: zip: not a valid zip file [corrupt]
	// found in handbook.pdf page 2
	// handbook.pdf: 2 chunks
	// rota.csv: 1 chunks
	// deleted chunks: 2
}
