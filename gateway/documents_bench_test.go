package gateway_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/ingest"
	"github.com/agentbus/agentbus/retrieval/ingest/ingesttest"
)

// benchFiles are n generated files of a kind: Markdown of a few
// paragraphs, or three-page PDFs.
func benchFiles(kind string, n int) [][2]string {
	files := make([][2]string, n)
	for i := range files {
		switch kind {
		case "md":
			body := fmt.Sprintf("# Note %d\n\n", i)
			for p := range 6 {
				body += fmt.Sprintf("Paragraph %d of note %d tells of token%d and term%d, with enough words to be a real paragraph of a real note.\n\n", p, i, i, p)
			}
			files[i] = [2]string{fmt.Sprintf("note-%04d.md", i), body}
		case "pdf":
			files[i] = [2]string{fmt.Sprintf("paper-%03d.pdf", i), string(ingesttest.PDF(
				fmt.Sprintf("Paper %d, page one: the introduction of token%d.", i, i),
				fmt.Sprintf("Page two of paper %d: the method, measured twice.", i),
				fmt.Sprintf("Page three of paper %d: the conclusion.", i)))}
		}
	}
	return files
}

func filesBytes(files [][2]string) int64 {
	var n int64
	for _, f := range files {
		n += int64(len(f[1]))
	}
	return n
}

// BenchmarkUpload measures uploads through POST /v1/documents, indexed by
// one and by two ingest workers, beside `agentbus index`'s path (the
// Ingester over the same files on disk) in the same run: documents/s and
// MB/s from the request to the workflow's end.
func BenchmarkUpload(b *testing.B) {
	for _, c := range []struct {
		kind string
		n    int
	}{{"md", 1000}, {"pdf", 50}} {
		files := benchFiles(c.kind, c.n)
		size := filesBytes(files)
		b.Run(fmt.Sprintf("%s-%d/index-cli", c.kind, c.n), func(b *testing.B) {
			dir := b.TempDir()
			for _, f := range files {
				if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			ix, err := embedded.Open(embedded.Config{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			in, err := ingest.New(ingest.Config{Backend: ix, Tenant: gateway.DefaultTenant})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for b.Loop() {
				if sum, err := in.Run(context.Background(), dir); err != nil || sum.Documents != c.n {
					b.Fatalf("Run: %+v %v", sum, err)
				}
			}
			report(b, c.n, size, time.Since(start))
		})
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s-%d/upload-%dworkers", c.kind, c.n, workers), func(b *testing.B) {
				s := startDocStackN(b, workers, func(cfg *gateway.Config) { cfg.Documents.MaxUploadBytes = 1 << 30 })
				body, ct := multipartBody(b, files, nil)
				start := time.Now()
				for b.Loop() {
					_, outs := s.upload(b, body, ct)
					docs := 0
					for _, o := range outs {
						docs += o.Documents
					}
					if docs != c.n {
						b.Fatalf("indexed %d documents, want %d", docs, c.n)
					}
				}
				report(b, c.n, size, time.Since(start))
			})
		}
	}
}

func report(b *testing.B, docs int, size int64, took time.Duration) {
	per := took.Seconds() / float64(b.N)
	b.ReportMetric(float64(docs)/per, "docs/s")
	b.ReportMetric(float64(size)/(1<<20)/per, "MB/s")
}
