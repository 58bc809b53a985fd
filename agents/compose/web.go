package compose

import (
	"fmt"
	"strings"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
)

// selectCapability is the web graph's select step (agents/selectweb),
// whose kept documents the composer cites beside the search hits.
const selectCapability = "select"

// webDocument is the part of a document a select step kept read here.
type webDocument struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	Source   string         `json:"source"`
	Metadata map[string]any `json:"metadata"`
}

// webHits are the documents of the select step the step depends on, as
// hits whose URL is their page's: one chunk each, the document whole.
func webHits(req agents.Request) []hit {
	var out struct {
		Documents []webDocument `json:"documents"`
	}
	if !agentkit.Dependency(req, selectCapability, &out) {
		return nil
	}
	hits := make([]hit, 0, len(out.Documents))
	for _, d := range out.Documents {
		h := hit{ID: d.ID, DocID: d.ID, Title: d.Title, Text: d.Text, Source: d.Source, Metadata: d.Metadata}
		if h.Source == "" {
			h.Source = d.ID
		}
		hits = append(hits, h)
	}
	return usable(hits)
}

// withWeb interleaves the search hits and the web hits, best of each
// first (local, web, local, …), leaving out a web page the index already
// returned (ingested by an earlier workflow).
func withWeb(local, web []hit) []hit {
	if len(web) == 0 {
		return local
	}
	have := map[string]bool{}
	for _, h := range local {
		have[h.DocID] = true
	}
	out := make([]hit, 0, len(local)+len(web))
	i, j := 0, 0
	for i < len(local) || j < len(web) {
		if i < len(local) {
			out = append(out, local[i])
			i++
		}
		for j < len(web) {
			h := web[j]
			j++
			if !have[h.DocID] {
				out = append(out, h)
				break
			}
		}
	}
	return out
}

// urlOf is the web address a hit came from: its metadata's "url" (set by
// the select step, and kept in the chunks of an ingested web page), or
// its source when that is an http(s) URL; "" for a local document.
func urlOf(h hit) string {
	if u, ok := h.Metadata["url"].(string); ok && isURL(u) {
		return u
	}
	if isURL(h.Source) {
		return h.Source
	}
	return ""
}

func isURL(s string) bool { return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") }

// webSources lists the cited web pages with their URLs, for a summary
// (a report's Sources section already names them): "Web sources:" then
// "[n] Title — URL" per page, in citation order; "" when none is cited.
func (c *composition) webSources() string {
	var b strings.Builder
	for _, r := range c.refs {
		h := c.hits[r.hit]
		u := urlOf(h)
		if u == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nWeb sources:\n")
		}
		if t := strings.TrimSpace(h.Title); t != "" && t != u {
			fmt.Fprintf(&b, "[%d] %s — %s\n", r.n, t, u)
		} else {
			fmt.Fprintf(&b, "[%d] %s\n", r.n, u)
		}
	}
	return b.String()
}
