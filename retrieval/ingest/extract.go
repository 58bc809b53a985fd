package ingest

import (
	"bytes"
	"maps"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentbus/agentbus/retrieval"
)

// Extracted is the text of one file, in sections, before it is cut into
// chunks.
type Extracted struct {
	Format Format `json:"format"`
	// Title is the document's title: a Markdown file's leading "# …", an
	// HTML page's or DOCX's title, else empty (callers use the file name).
	Title string `json:"title,omitempty"`
	// Metadata applies to every chunk: "format", and "pages" for a PDF.
	Metadata map[string]any `json:"metadata,omitempty"`
	Sections []Section      `json:"sections"`
}

// Section is a run of a document that its chunks cite: a PDF page, a
// sheet's rows, or the whole text of a Markdown, HTML or DOCX file.
type Section struct {
	// Text is cut by the retrieval.Chunker (Markdown headings start
	// sections). Empty for a table.
	Text string `json:"text,omitempty"`
	// Metadata is added to each chunk of the section, e.g. {"page": 3}
	// or {"sheet": "Q3"}; a table's chunks also get row_start and
	// row_end.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Table, when set, holds rows that are packed into chunks whole, each
	// chunk starting with the header row so no chunk loses its columns.
	Table *Table `json:"table,omitempty"`
}

// Table is a sheet or CSV file: the header and the rows after it.
type Table struct {
	// Name is the sheet's name; empty for CSV.
	Name   string   `json:"name,omitempty"`
	Header []string `json:"header"`
	Rows   []Row    `json:"rows"`
}

// Row is one row of a table with its 1-based row number in the file or
// sheet (the header is row 1 when it is the first row).
type Row struct {
	N     int      `json:"n"`
	Cells []string `json:"cells"`
}

// Extract reads one file's text. The format is Detect's: by name, then by
// content. Every failure is a *FileError wrapping ErrUnsupported,
// ErrMismatch, ErrTooLarge, ErrCorrupt, ErrInvalidUTF8 or ErrEmpty; a
// parser that panics on a malformed file is caught and reported as
// ErrCorrupt. JSONL is not extracted here (it holds many documents): it
// is ErrUnsupported for Extract, and Ingester reads it line by line.
// Extract is safe for concurrent use.
func Extract(name string, data []byte, lim Limits) (Extracted, error) {
	lim.setDefaults()
	if int64(len(data)) > lim.MaxFileBytes {
		return Extracted{}, fileErr(name, FormatOf(name), ErrTooLarge, "%d bytes, over the limit of %d", len(data), lim.MaxFileBytes)
	}
	f, err := Detect(name, data)
	if err != nil {
		return Extracted{}, err
	}
	var ex Extracted
	err = guard(name, f, func() error {
		var err error
		switch f {
		case FormatMarkdown, FormatText:
			ex, err = extractText(name, f, data)
		case FormatHTML:
			ex, err = extractHTML(name, data)
		case FormatPDF:
			ex, err = extractPDF(name, data, lim)
		case FormatDOCX:
			ex, err = extractDOCX(name, data, lim)
		case FormatCSV:
			ex, err = extractCSV(name, data, lim)
		case FormatXLSX:
			ex, err = extractXLSX(name, data, lim)
		default:
			err = fileErr(name, f, ErrUnsupported, "%s holds many documents: read it with Ingester", f)
		}
		return err
	})
	if err != nil {
		return Extracted{}, err
	}
	ex.Format = f
	if ex.Metadata == nil {
		ex.Metadata = map[string]any{}
	}
	ex.Metadata["format"] = string(f)
	if !ex.hasText() {
		return Extracted{}, fileErr(name, f, ErrEmpty, "no text to index%s", emptyHint(f))
	}
	return ex, nil
}

func emptyHint(f Format) string {
	if f == FormatPDF {
		return " (a scanned PDF without a text layer needs OCR first)"
	}
	return ""
}

func (ex Extracted) hasText() bool {
	for _, s := range ex.Sections {
		if strings.TrimSpace(s.Text) != "" || (s.Table != nil && len(s.Table.Rows) > 0) {
			return true
		}
	}
	return false
}

// extractText reads Markdown or text: a leading "# Title" line of a
// Markdown file is its title.
func extractText(name string, f Format, data []byte) (Extracted, error) {
	if err := checkUTF8(name, f, data); err != nil {
		return Extracted{}, err
	}
	text := string(bytes.TrimPrefix(data, []byte("\ufeff")))
	var title string
	if f == FormatMarkdown {
		trimmed := strings.TrimLeft(text, " \t\r\n")
		first, rest, _ := strings.Cut(trimmed, "\n")
		if h, ok := strings.CutPrefix(strings.TrimSpace(first), "# "); ok && strings.TrimSpace(h) != "" {
			title, text = strings.TrimSpace(strings.TrimRight(h, "#")), rest
		}
	}
	return Extracted{Title: title, Sections: []Section{{Text: text}}}, nil
}

// Chunks cuts an extracted file into the chunks of document doc (its ID,
// Title, Source and Metadata; doc.Text is ignored): sections' text by the
// chunker, tables by rows with the header first in every chunk, a table
// chunk at most maxChars characters (0 or less: the chunker's MaxChars). Chunk
// IDs are "<doc id>#<n>", n from 0 across all sections, and each chunk's
// metadata is doc's, then the extraction's, then its section's.
func Chunks(ch *retrieval.Chunker, maxChars int, doc retrieval.Document, ex Extracted) []retrieval.Chunk {
	if maxChars <= 0 {
		maxChars = ch.MaxChars()
	}
	var out []retrieval.Chunk
	for _, s := range ex.Sections {
		md := maps.Clone(doc.Metadata)
		if md == nil {
			md = map[string]any{}
		}
		maps.Copy(md, ex.Metadata)
		maps.Copy(md, s.Metadata)
		var part []retrieval.Chunk
		if s.Table != nil {
			part = tableChunks(doc, md, s.Table, maxChars)
		} else {
			d := doc
			d.Text, d.Metadata = s.Text, md
			part = ch.Chunk(d)
		}
		for _, c := range part {
			c.ID = doc.ID + "#" + strconv.Itoa(len(out))
			out = append(out, c)
		}
	}
	return out
}

// tableChunks packs rows into chunks of at most maxChars (a row longer
// than that is a chunk of its own), each starting with the header line.
func tableChunks(doc retrieval.Document, md map[string]any, t *Table, maxChars int) []retrieval.Chunk {
	header := strings.Join(t.Header, " | ")
	title := doc.Title
	if t.Name != "" {
		title = strings.Join(append(nonEmpty(doc.Title), t.Name), retrieval.TitleSeparator)
	}
	var out []retrieval.Chunk
	var b strings.Builder
	first, last := 0, 0
	emit := func() {
		if first == 0 {
			return
		}
		m := maps.Clone(md)
		m["row_start"], m["row_end"] = first, last
		c := retrieval.Chunk{DocID: doc.ID, Title: title, Text: b.String(), Source: doc.Source, Metadata: m}
		out = append(out, c)
		b.Reset()
		first = 0
	}
	for _, r := range t.Rows {
		line := strings.Join(r.Cells, " | ")
		if first != 0 && utf8.RuneCountInString(b.String())+1+utf8.RuneCountInString(line) > maxChars {
			emit()
		}
		if first == 0 {
			b.WriteString(header)
			first = r.N
		}
		b.WriteByte('\n')
		b.WriteString(line)
		last = r.N
	}
	emit()
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// baseTitle is a file's name without directory and extension.
func baseTitle(rel string) string {
	return strings.TrimSuffix(path.Base(rel), path.Ext(rel))
}
