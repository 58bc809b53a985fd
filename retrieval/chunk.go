package retrieval

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ChunkerConfig sizes chunks. The zero value means the defaults.
type ChunkerConfig struct {
	// MaxChars bounds a chunk's text, in characters (runes), overlap
	// included; default 800.
	MaxChars int
	// Overlap is how many characters at most of a chunk's end are repeated
	// at the start of the next chunk of the same section, so a passage cut
	// in two is still found whole; default 100. 0 means the default; a
	// negative value means no overlap.
	Overlap int
}

func (c *ChunkerConfig) setDefaults() {
	if c.MaxChars == 0 {
		c.MaxChars = 800
	}
	switch {
	case c.Overlap == 0:
		c.Overlap = min(100, c.MaxChars/4)
	case c.Overlap < 0:
		c.Overlap = 0
	}
}

// Validate reports every problem with the configuration.
func (c ChunkerConfig) Validate() error {
	var errs []error
	if c.MaxChars < 40 {
		errs = append(errs, fmt.Errorf("retrieval: chunker MaxChars %d: want at least 40", c.MaxChars))
	}
	if c.Overlap*2 > c.MaxChars {
		errs = append(errs, fmt.Errorf("retrieval: chunker Overlap %d: want at most half of MaxChars (%d)", c.Overlap, c.MaxChars))
	}
	return errors.Join(errs...)
}

// Chunker cuts documents into chunks. Sections start at Markdown headings
// and carry them in the chunk's Title ("doc title › heading › sub
// heading"); within a section, chunks end at paragraph breaks where they
// can, else at sentence ends, else between words. Only a single word
// longer than a chunk is ever cut, at a character boundary. A Chunker is
// immutable and safe for concurrent use.
type Chunker struct {
	cfg ChunkerConfig
}

// NewChunker returns a Chunker for cfg after applying its defaults.
func NewChunker(cfg ChunkerConfig) (*Chunker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Chunker{cfg: cfg}, nil
}

// MaxChars is the most characters (runes) a chunk holds, as configured.
func (c *Chunker) MaxChars() int { return c.cfg.MaxChars }

// TitleSeparator joins a document's title and the headings above a chunk.
const TitleSeparator = " › "

// Chunk cuts doc into chunks with IDs "<doc id>#<n>", n from 0. Each
// chunk carries the document's ID, Source and a copy of its Metadata, and
// Date from metadata "date" when that is an RFC 3339 time or a
// YYYY-MM-DD date. A document without text yields no chunks.
func (c *Chunker) Chunk(doc Document) []Chunk {
	date := docDate(doc.Metadata)
	var out []Chunk
	for _, s := range sections(doc.Text) {
		title := strings.Join(append(nonEmpty(doc.Title), s.headings...), TitleSeparator)
		for _, text := range c.pack(s.body) {
			out = append(out, Chunk{
				ID:       doc.ID + "#" + strconv.Itoa(len(out)),
				DocID:    doc.ID,
				Title:    title,
				Text:     text,
				Source:   doc.Source,
				Metadata: maps.Clone(doc.Metadata),
				Date:     date,
			})
		}
	}
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// docDate parses metadata "date"; an absent or unparsable date is zero.
func docDate(md map[string]any) time.Time {
	s, ok := md["date"].(string)
	if !ok {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// piece is a span of text that is never split further, and the separator
// that joins it to the piece before it in the same chunk.
type piece struct {
	sep, text string
}

// pack packs a section's body into chunks of at most MaxChars.
func (c *Chunker) pack(body string) []string {
	limit := c.cfg.MaxChars - c.cfg.Overlap - 2 // room for the overlap and a separator
	var pieces []piece
	for _, para := range paragraphs(body) {
		for i, p := range split(para, limit) {
			if i == 0 {
				p.sep = "\n\n"
			}
			pieces = append(pieces, p)
		}
	}
	var out []string
	var cur strings.Builder
	curLen, fresh := 0, false // fresh: cur holds text not yet in a chunk
	emit := func() {
		if !fresh {
			return
		}
		text := cur.String()
		out = append(out, text)
		tail := overlapTail(text, c.cfg.Overlap)
		cur.Reset()
		cur.WriteString(tail)
		curLen, fresh = utf8.RuneCountInString(tail), false
	}
	for _, p := range pieces {
		n := utf8.RuneCountInString(p.text)
		if curLen > 0 && curLen+len(p.sep)+n > c.cfg.MaxChars {
			emit()
		}
		if curLen > 0 {
			if curLen+len(p.sep)+n > c.cfg.MaxChars { // the overlap does not leave room
				cur.Reset()
				curLen = 0
			} else {
				cur.WriteString(p.sep)
				curLen += len(p.sep)
			}
		}
		cur.WriteString(p.text)
		curLen += n
		fresh = true
	}
	emit()
	return out
}

// paragraphs splits text at blank lines and trims each paragraph.
func paragraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// split cuts a paragraph into pieces of at most limit runes: the whole
// paragraph if it fits, else its sentences (several short ones together),
// a sentence too long cut between words, a word too long cut at rune
// boundaries. A piece's sep is what joins it to the piece before it: a
// space, or nothing inside a cut word.
func split(para string, limit int) []piece {
	if utf8.RuneCountInString(para) <= limit {
		return []piece{{text: para}}
	}
	var out []piece
	for _, s := range sentences(para) {
		if utf8.RuneCountInString(s) <= limit {
			out = appendJoined(out, s, limit)
			continue
		}
		for _, w := range strings.Fields(s) {
			sep := " "
			for utf8.RuneCountInString(w) > limit {
				cut := runeOffset(w, limit)
				out = append(out, piece{sep: sep, text: w[:cut]})
				w, sep = w[cut:], ""
			}
			if sep == "" {
				out = append(out, piece{text: w})
				continue
			}
			out = appendJoined(out, w, limit)
		}
	}
	return out
}

// appendJoined appends s to the last piece when both fit in limit, else
// as a new piece; short sentences and words stay together.
func appendJoined(out []piece, s string, limit int) []piece {
	if n := len(out); n > 0 && utf8.RuneCountInString(out[n-1].text)+1+utf8.RuneCountInString(s) <= limit {
		out[n-1].text += " " + s
		return out
	}
	return append(out, piece{sep: " ", text: s})
}

// sentences splits text after '.', '!', '?' (or their CJK forms) that are
// followed by white space, and at line breaks; white space is normalised.
func sentences(text string) []string {
	var out []string
	var cur strings.Builder
	rs := []rune(text)
	for i, r := range rs {
		if unicode.IsSpace(r) {
			if cur.Len() > 0 && (r == '\n' || endsSentence(rs, i)) {
				out = append(out, cur.String())
				cur.Reset()
			} else if cur.Len() > 0 && !unicode.IsSpace(rs[i-1]) {
				cur.WriteByte(' ')
			}
			continue
		}
		cur.WriteRune(r)
		if strings.ContainsRune("。！？", r) {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// endsSentence reports whether the space at rs[i] follows the end of a
// sentence.
func endsSentence(rs []rune, i int) bool {
	return i > 0 && strings.ContainsRune(".!?", rs[i-1])
}

// runeOffset is the byte offset of the n-th rune of s.
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// overlapTail returns the end of text to repeat at the start of the next
// chunk: at most max runes, starting at a sentence start when one lies in
// that window, else at a word start; "" when no whole word fits.
func overlapTail(text string, max int) string {
	if max <= 0 {
		return ""
	}
	n := utf8.RuneCountInString(text)
	if n <= max {
		return "" // the whole chunk again would only repeat it
	}
	start := runeOffset(text, n-max)
	window := text[start:]
	// A sentence start: after ". " (or "! ", "? ", a line break).
	for i, r := range window {
		if i > 0 && unicode.IsSpace(r) && (r == '\n' || strings.ContainsRune(".!?", rune(window[i-1]))) {
			if t := strings.TrimSpace(window[i:]); t != "" {
				return t
			}
		}
	}
	// Else a word start: skip the part of a word the window cut into.
	if r, _ := utf8.DecodeLastRuneInString(text[:start]); start > 0 && !unicode.IsSpace(r) {
		i := strings.IndexFunc(window, unicode.IsSpace)
		if i < 0 {
			return ""
		}
		window = window[i:]
	}
	return strings.TrimSpace(window)
}

// section is a run of text under the same Markdown headings.
type section struct {
	headings []string
	body     string
}

// sections splits Markdown text at ATX headings ("# x" … "###### x", at
// the start of a line, outside fenced code blocks). Each section carries
// the headings above it, outermost first; text with no headings is one
// section. Sections with no body are dropped, their headings live on in
// their subsections.
func sections(text string) []section {
	var out []section
	var stack []heading
	var body strings.Builder
	flush := func() {
		if strings.TrimSpace(body.String()) != "" {
			hs := make([]string, len(stack))
			for i, h := range stack {
				hs[i] = h.text
			}
			out = append(out, section{headings: hs, body: body.String()})
		}
		body.Reset()
	}
	fence := ""
	for line := range strings.Lines(text) {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
		default:
			if h, ok := parseHeading(line); ok {
				flush()
				for len(stack) > 0 && stack[len(stack)-1].level >= h.level {
					stack = stack[:len(stack)-1]
				}
				stack = append(stack, h)
				continue
			}
		}
		body.WriteString(line)
	}
	flush()
	return out
}

type heading struct {
	level int
	text  string
}

// parseHeading recognises "#{1,6} text" at the start of line, with the
// optional closing run of '#' removed.
func parseHeading(line string) (heading, bool) {
	level := 0
	for level < len(line) && line[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || level == len(line) || (line[level] != ' ' && line[level] != '\t') {
		return heading{}, false
	}
	text := strings.TrimSpace(line[level:])
	if t := strings.TrimRight(text, "#"); t == "" || strings.HasSuffix(t, " ") {
		text = strings.TrimSpace(t)
	}
	if text == "" {
		return heading{}, false
	}
	return heading{level: level, text: text}, true
}
