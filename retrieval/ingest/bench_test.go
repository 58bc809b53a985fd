package ingest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/ingest"
	"github.com/agentbus/agentbus/retrieval/ingest/ingesttest"
)

// prose is n sentences of varied English, deterministic.
func prose(seed, n int) string {
	words := strings.Fields("harbour crane container shift docker tide moon survey theodolite battery orchard kestrel ledger invoice policy rota holiday gadget tariff lighthouse keeper staircase violin bakery sourdough cyclist")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "The %s near the %s logged %d %ss on day %d. ", words[(seed+i)%len(words)], words[(seed*7+i*3)%len(words)], (seed*31+i*17)%997, words[(i*5+seed)%len(words)], i%31+1)
	}
	return b.String()
}

// benchFixtures are one file of each format, sized so that one Extract
// takes long enough to measure.
func benchFixtures() map[string][]byte {
	pages := make([]string, 3)
	for i := range pages {
		var lines []string
		for l := range 45 {
			lines = append(lines, prose(i*100+l, 1))
		}
		pages[i] = strings.Join(lines, "\n")
	}
	var paras []ingesttest.Para
	for i := range 200 {
		if i%20 == 0 {
			paras = append(paras, ingesttest.Para{Style: "Heading1", Text: fmt.Sprintf("Section %d", i/20)})
		}
		paras = append(paras, ingesttest.Para{Text: prose(i, 3)})
	}
	sheet := ingesttest.Sheet{Name: "Ledger", Rows: [][]any{{"id", "date", "account", "memo", "amount"}}}
	var csv strings.Builder
	csv.WriteString("id,date,account,memo,amount\n")
	for i := 1; i <= 2000; i++ {
		memo := prose(i, 1)
		sheet.Rows = append(sheet.Rows, []any{i, fmt.Sprintf("2024-%02d-%02d", i%12+1, i%28+1), fmt.Sprintf("ACC-%03d", i%150), memo, float64(i%977) * 1.25})
		fmt.Fprintf(&csv, "%d,2024-%02d-%02d,ACC-%03d,\"%s\",%.2f\n", i, i%12+1, i%28+1, i%150, memo, float64(i%977)*1.25)
	}
	var sections [][2]string
	var md strings.Builder
	md.WriteString("# Field notes\n\n")
	for i := range 60 {
		sections = append(sections, [2]string{fmt.Sprintf("Part %d", i), prose(i, 4) + "\n\n" + prose(i+1000, 4)})
		fmt.Fprintf(&md, "## Part %d\n\n%s\n\n%s\n\n", i, prose(i, 4), prose(i+1000, 4))
	}
	return map[string][]byte{
		"report.pdf":  ingesttest.PDF(pages...),
		"manual.docx": ingesttest.DOCX("Manual", paras...),
		"ledger.xlsx": ingesttest.XLSX(sheet),
		"ledger.csv":  []byte(csv.String()),
		"notes.html":  ingesttest.HTML("Field notes", sections...),
		"notes.md":    []byte(md.String()),
	}
}

// BenchmarkExtract is parse + chunk throughput per format; MB/s is of the
// file as given (a compressed DOCX or XLSX counts its zipped size, and the
// text it holds is reported as text-MB/s).
func BenchmarkExtract(b *testing.B) {
	ch, _ := retrieval.NewChunker(retrieval.ChunkerConfig{})
	for _, name := range []string{"report.pdf", "manual.docx", "ledger.xlsx", "ledger.csv", "notes.html", "notes.md"} {
		data := benchFixtures()[name]
		b.Run(strings.TrimPrefix(filepath.Ext(name), "."), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			text, chunks := 0, 0
			for b.Loop() {
				ex, err := ingest.Extract(name, data, ingest.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				cs := ingest.Chunks(ch, 0, retrieval.Document{ID: name, Title: "T"}, ex)
				text, chunks = 0, len(cs)
				for _, c := range cs {
					text += len(c.Text)
				}
			}
			b.ReportMetric(float64(text)*float64(b.N)/b.Elapsed().Seconds()/1e6, "text-MB/s")
			b.ReportMetric(float64(chunks), "chunks")
		})
	}
}

// BenchmarkIndexMarkdown indexes 1,000 Markdown files (~1.5 KB each) into
// a fresh embedded index per iteration: by whole documents through
// ReplaceBatch (the default now) and by chunks through Index (the path
// before DocumentStore, AppendOnly).
func BenchmarkIndexMarkdown(b *testing.B) {
	dir := b.TempDir()
	var total int64
	for i := range 1000 {
		body := fmt.Sprintf("# Note %d\n\n%s\n\n## Details\n\n%s\n", i, prose(i, 6), prose(i+5000, 8))
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i/100), fmt.Sprintf("note-%04d.md", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
		total += int64(len(body))
	}
	for _, mode := range []struct {
		name       string
		appendOnly bool
	}{{"replace", false}, {"index", true}} {
		b.Run(mode.name, func(b *testing.B) {
			b.SetBytes(total)
			docs := 0
			for b.Loop() {
				b.StopTimer()
				ix, err := embedded.Open(embedded.Config{Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				in, err := ingest.New(ingest.Config{Backend: ix, Tenant: "bench", AppendOnly: mode.appendOnly})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				sum, err := in.Run(b.Context(), dir)
				if err != nil || sum.Documents != 1000 || len(sum.Errors) > 0 {
					b.Fatalf("Run = %+v, %v", sum, err)
				}
				docs += sum.Documents
				b.StopTimer()
				_ = ix.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(docs)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}
