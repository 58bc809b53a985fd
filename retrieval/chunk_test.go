package retrieval_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentbus/agentbus/retrieval"
)

func newChunker(t *testing.T, cfg retrieval.ChunkerConfig) *retrieval.Chunker {
	t.Helper()
	c, err := retrieval.NewChunker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkWordsKept checks that every word of text appears whole
// among the words of the chunks (overlaps allowed).
func checkWordsKept(t *testing.T, text string, chunks []retrieval.Chunk) {
	t.Helper()
	var have []string
	for _, c := range chunks {
		have = append(have, strings.Fields(c.Text)...)
	}
	set := map[string]bool{}
	for _, w := range have {
		set[w] = true
	}
	for _, w := range strings.Fields(text) {
		if strings.HasPrefix(w, "#") {
			continue // heading marks move into titles
		}
		if !set[w] {
			t.Errorf("word %q of the text is in no chunk (cut mid-word or lost)", w)
		}
	}
}

func TestChunkerConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  retrieval.ChunkerConfig
		ok   bool
	}{
		{"zero means defaults", retrieval.ChunkerConfig{}, true},
		{"no overlap", retrieval.ChunkerConfig{MaxChars: 100, Overlap: -1}, true},
		{"too small", retrieval.ChunkerConfig{MaxChars: 10}, false},
		{"overlap too large", retrieval.ChunkerConfig{MaxChars: 100, Overlap: 60}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := retrieval.NewChunker(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("NewChunker(%+v) = %v, want ok=%v", tt.cfg, err, tt.ok)
			}
		})
	}
}

func TestChunkSizesAndBoundaries(t *testing.T) {
	sentence := func(i int) string {
		return fmt.Sprintf("Sentence number %d talks about streams, consumers and acknowledgements.", i)
	}
	var paras []string
	for p := range 6 {
		var ss []string
		for s := range 5 {
			ss = append(ss, sentence(p*10+s))
		}
		paras = append(paras, strings.Join(ss, " "))
	}
	text := strings.Join(paras, "\n\n")
	tests := []struct {
		name string
		cfg  retrieval.ChunkerConfig
	}{
		{"default", retrieval.ChunkerConfig{}},
		{"small", retrieval.ChunkerConfig{MaxChars: 200, Overlap: 50}},
		{"tiny no overlap", retrieval.ChunkerConfig{MaxChars: 60, Overlap: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChunker(t, tt.cfg)
			max := tt.cfg.MaxChars
			if max == 0 {
				max = 800
			}
			chunks := c.Chunk(retrieval.Document{ID: "d", Title: "T", Text: text, Source: "s.md"})
			if want := utf8.RuneCountInString(text)/max + 1; len(chunks) < want {
				t.Fatalf("%d chunks, want at least %d", len(chunks), want)
			}
			for i, ch := range chunks {
				if n := utf8.RuneCountInString(ch.Text); n > max || n == 0 {
					t.Errorf("chunk %d has %d chars, want 1..%d", i, n, max)
				}
				if ch.ID != fmt.Sprintf("d#%d", i) || ch.DocID != "d" || ch.Title != "T" || ch.Source != "s.md" {
					t.Errorf("chunk %d: id %q doc %q title %q source %q", i, ch.ID, ch.DocID, ch.Title, ch.Source)
				}
				if ch.Text != strings.TrimSpace(ch.Text) {
					t.Errorf("chunk %d has untrimmed text %q", i, ch.Text)
				}
			}
			checkWordsKept(t, text, chunks)
		})
	}
}

func TestChunkEndsAtSentencesAndOverlaps(t *testing.T) {
	// 4 sentences of 49 characters plus spaces: with MaxChars 120 and
	// Overlap 60, chunk 0 holds sentences 1–2 (49+1+49 = 99; a third would
	// make 149), chunk 1 starts with the overlap (sentence 2, 49 ≤ 60)
	// and adds sentence 3 (49+1+49 = 99), and so on.
	s := []string{
		"Alpha alpha alpha alpha alpha alpha alpha alpha.",
		"Bravo bravo bravo bravo bravo bravo bravo bravo.",
		"Charlie charlie charlie charlie charlie charlie.",
		"Delta delta delta delta delta delta delta delta.",
	}
	c := newChunker(t, retrieval.ChunkerConfig{MaxChars: 120, Overlap: 60})
	got := c.Chunk(retrieval.Document{ID: "x", Text: strings.Join(s, " ")})
	want := []string{s[0] + " " + s[1], s[1] + " " + s[2], s[2] + " " + s[3]}
	if len(got) != len(want) {
		t.Fatalf("got %d chunks %q, want %q", len(got), texts(got), want)
	}
	for i := range want {
		if got[i].Text != want[i] {
			t.Errorf("chunk %d = %q, want %q", i, got[i].Text, want[i])
		}
	}
}

func texts(cs []retrieval.Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Text
	}
	return out
}

func TestChunkMarkdownHeadings(t *testing.T) {
	md := "Intro line.\n\n# Streams\n\nStreams store messages.\n\n## Retention\n\nLimits or work queue.\n\n" +
		"```sh\n# not a heading\necho hi\n```\n\n# Consumers #\n\nConsumers read.\n"
	c := newChunker(t, retrieval.ChunkerConfig{})
	got := c.Chunk(retrieval.Document{ID: "guide.md", Title: "Guide", Text: md})
	want := []struct{ title, text string }{
		{"Guide", "Intro line."},
		{"Guide › Streams", "Streams store messages."},
		{"Guide › Streams › Retention", "Limits or work queue.\n\n```sh\n# not a heading\necho hi\n```"},
		{"Guide › Consumers", "Consumers read."},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d chunks %q, want %d", len(got), texts(got), len(want))
	}
	for i, w := range want {
		if got[i].Title != w.title || got[i].Text != w.text {
			t.Errorf("chunk %d = (%q, %q), want (%q, %q)", i, got[i].Title, got[i].Text, w.title, w.text)
		}
	}
}

func TestChunkUnicode(t *testing.T) {
	// Multi-byte runes count as one character each; a cut never splits
	// a rune and CJK sentence ends are boundaries.
	const jp = "日本語の文章です。"
	latin := strings.Repeat("Ünïcödé wörds ñ ", 40)
	text := strings.Repeat(jp, 30) + "\n\n" + latin
	c := newChunker(t, retrieval.ChunkerConfig{MaxChars: 50, Overlap: 10})
	chunks := c.Chunk(retrieval.Document{ID: "u", Text: text})
	if len(chunks) < 10 {
		t.Fatalf("%d chunks, want at least 10", len(chunks))
	}
	for i, ch := range chunks {
		if !utf8.ValidString(ch.Text) {
			t.Fatalf("chunk %d is not valid UTF-8: %q", i, ch.Text)
		}
		if n := utf8.RuneCountInString(ch.Text); n > 50 {
			t.Errorf("chunk %d has %d runes, want ≤ 50", i, n)
		}
	}
	sentences := 0
	for i, ch := range chunks {
		if strings.HasPrefix(ch.Text, "日") {
			// Japanese chunks hold whole sentences (joined by a space).
			head, _, _ := strings.Cut(ch.Text, "\n\n")
			if rest := strings.ReplaceAll(strings.ReplaceAll(head, jp, ""), " ", ""); rest != "" {
				t.Errorf("chunk %d = %q: %q is not whole sentences", i, ch.Text, rest)
			}
			sentences += strings.Count(head, jp)
		}
	}
	if sentences < 30 {
		t.Errorf("%d Japanese sentences in chunks, want at least 30", sentences)
	}
	checkWordsKept(t, latin, chunks)
}

func TestChunkLongWord(t *testing.T) {
	// A word longer than a chunk is the one thing cut: into pieces at rune
	// boundaries that, joined, give the word back.
	long := strings.Repeat("ä", 130)
	c := newChunker(t, retrieval.ChunkerConfig{MaxChars: 50, Overlap: -1})
	chunks := c.Chunk(retrieval.Document{ID: "w", Text: "before " + long + " after"})
	var joined strings.Builder
	for i, ch := range chunks {
		if n := utf8.RuneCountInString(ch.Text); n > 50 {
			t.Errorf("chunk %d has %d runes, want ≤ 50", i, n)
		}
		joined.WriteString(strings.ReplaceAll(strings.ReplaceAll(ch.Text, "before", ""), "after", ""))
	}
	if got := strings.TrimSpace(joined.String()); got != long {
		t.Fatalf("pieces join to %q (%d runes), want the word back", got, utf8.RuneCountInString(got))
	}
	if !strings.HasPrefix(chunks[0].Text, "before") || !strings.HasSuffix(chunks[len(chunks)-1].Text, "after") {
		t.Errorf("first/last chunk = %q / %q", chunks[0].Text, chunks[len(chunks)-1].Text)
	}
}

func TestChunkMetadataAndDate(t *testing.T) {
	tests := []struct {
		date string
		want time.Time
	}{
		{"2024-03-05", time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)},
		{"2024-03-05T10:11:12+02:00", time.Date(2024, 3, 5, 8, 11, 12, 0, time.UTC)},
		{"last tuesday", time.Time{}},
	}
	c := newChunker(t, retrieval.ChunkerConfig{})
	for _, tt := range tests {
		t.Run(tt.date, func(t *testing.T) {
			md := map[string]any{"date": tt.date, "lang": "en"}
			chunks := c.Chunk(retrieval.Document{ID: "m", Text: "Some text.", Metadata: md})
			if len(chunks) != 1 {
				t.Fatalf("%d chunks, want 1", len(chunks))
			}
			if !chunks[0].Date.Equal(tt.want) {
				t.Errorf("Date = %v, want %v", chunks[0].Date, tt.want)
			}
			if chunks[0].Metadata["lang"] != "en" {
				t.Errorf("Metadata = %v, want the document's", chunks[0].Metadata)
			}
			chunks[0].Metadata["lang"] = "changed"
			if md["lang"] != "en" {
				t.Error("a chunk's metadata aliases the document's map")
			}
		})
	}
}

func TestChunkEmpty(t *testing.T) {
	c := newChunker(t, retrieval.ChunkerConfig{})
	for _, text := range []string{"", "   \n\n\t", "# Only a heading\n"} {
		if got := c.Chunk(retrieval.Document{ID: "e", Text: text}); len(got) != 0 {
			t.Errorf("Chunk(%q) = %q, want none", text, texts(got))
		}
	}
}
