package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/retrieval"
)

// dependencyDocuments collects the "documents" of the outputs of the
// steps a step depends on, in step-id order.
func dependencyDocuments(outs map[string]json.RawMessage) []Document {
	var docs []Document
	for _, id := range slices.Sorted(maps.Keys(outs)) {
		var o struct {
			Documents []Document `json:"documents"`
		}
		if json.Unmarshal(outs[id], &o) == nil {
			docs = append(docs, o.Documents...)
		}
	}
	return docs
}

// documents indexes documents given whole; one without id or text is a
// problem, one id given twice keeps its first text.
func (a *Agent) documents(ctx context.Context, req agents.Request, emit agents.Emitter, given []Document, md map[string]any) (json.RawMessage, error) {
	out := Output{Indexed: []Indexed{}}
	seen := map[string]bool{}
	var versions []retrieval.Version
	for i, d := range given {
		where := fmt.Sprintf("documents/%d", i)
		switch {
		case strings.TrimSpace(d.ID) == "":
			out.Problems = append(out.Problems, Problem{File: where, Code: "invalid", Reason: "/id is missing or empty"})
			continue
		case strings.TrimSpace(d.Text) == "":
			out.Problems = append(out.Problems, Problem{File: d.ID, Code: "empty", Reason: "/text is missing or empty"})
			continue
		case seen[d.ID]:
			out.Problems = append(out.Problems, Problem{File: d.ID, Code: "duplicate", Reason: "given twice; the first is indexed"})
			continue
		}
		seen[d.ID] = true
		src := d.Source
		if src == "" {
			src = d.ID
		}
		doc := retrieval.Document{ID: d.ID, Title: d.Title, Text: d.Text, Source: src, Metadata: mergeMeta(md, d.Metadata)}
		versions = append(versions, retrieval.Version{DocID: d.ID, Chunks: a.chunker.Chunk(doc)})
		out.Bytes += int64(len(d.Text))
	}
	if len(versions) > 0 {
		if err := a.cfg.Store.ReplaceBatch(ctx, req.TenantID, versions); err != nil {
			return nil, fmt.Errorf("ingest: index %d documents: %w", len(versions), err)
		}
	}
	for _, v := range versions {
		out.Documents++
		out.Chunks += len(v.Chunks)
		out.Indexed = append(out.Indexed, Indexed{File: v.DocID, ID: v.DocID, Format: "text", Chunks: len(v.Chunks)})
	}
	_ = emit.Progress(ctx, 100, fmt.Sprintf("indexed %d documents, %d chunks", out.Documents, out.Chunks))
	return json.Marshal(out)
}
