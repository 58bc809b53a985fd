package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentbus/agentbus/retrieval"
)

// record is one JSONL line or JSON document of an upload.
type record struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	Source   string         `json:"source"`
	Metadata map[string]any `json:"metadata"`
}

// records reads JSONL: each line a document; a bad line is a problem with
// its line number, the others are indexed. A document id given twice
// keeps its first line.
func (a *Agent) records(name string, data []byte, md map[string]any) ([]retrieval.Version, []Problem) {
	var docs []retrieval.Version
	var problems []Problem
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		bad := func(code, format string, args ...any) {
			problems = append(problems, Problem{File: name, Line: n, Code: code, Reason: fmt.Sprintf(format, args...)})
		}
		if !utf8.Valid(line) {
			bad("invalid_utf8", "not valid UTF-8")
			continue
		}
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			bad("invalid_json", "not a JSON object: %v", err)
			continue
		}
		switch {
		case strings.TrimSpace(r.ID) == "":
			bad("invalid", "/id is missing or empty")
			continue
		case strings.TrimSpace(r.Text) == "":
			bad("invalid", "/text is missing or empty")
			continue
		}
		if first, dup := seen[r.ID]; dup {
			bad("duplicate", "document id %q was already given on line %d", r.ID, first)
			continue
		}
		seen[r.ID] = n
		src := r.Source
		if src == "" {
			src = fmt.Sprintf("%s:%d", name, n)
		}
		doc := retrieval.Document{ID: r.ID, Title: r.Title, Text: r.Text, Source: src,
			Metadata: mergeMeta(md, r.Metadata, map[string]any{"format": FormatJSONL})}
		chunks := a.chunker.Chunk(doc)
		docs = append(docs, retrieval.Version{DocID: r.ID, Chunks: chunks})
	}
	if err := sc.Err(); err != nil {
		problems = append(problems, Problem{File: name, Code: "unreadable", Reason: err.Error()})
	}
	return docs, problems
}
