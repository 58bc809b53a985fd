package compose

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/querykind"
)

// composition is one answer being built: its parts, streamed one artifact
// chunk each, and the hits it cites, numbered in order of first citation.
type composition struct {
	query      string
	understood querykind.Understanding
	// hits are what the answer may cite: the search and web hits (the
	// first found), then one per step source.
	hits       []hit
	found      int
	facts      []string
	report     bool
	k          int
	emit       agents.Emitter
	problems   []events.StepProblem
	comparison *comparison
	// conversation is the session's earlier turns, for the model.
	conversation *events.Conversation
	// passages maps an LLM passage number n to its hit, at n-1.
	passages []int

	parts []string
	refs  []ref // citations in number order
	// emitted counts the parts already published (a streamed answer's),
	// opened whether the artifact was opened.
	emitted int
	opened  bool
}

// ref is citation number n of hit index hit.
type ref struct{ n, hit int }

func (c *composition) add(part string) { c.parts = append(c.parts, part) }

// cite returns the citation number of hit h, numbering it on first use.
func (c *composition) cite(h int) int {
	for _, r := range c.refs {
		if r.hit == h {
			return r.n
		}
	}
	n := len(c.refs) + 1
	c.refs = append(c.refs, ref{n: n, hit: h})
	return n
}

func (c *composition) answer() string { return strings.TrimRight(strings.Join(c.parts, ""), "\n ") }

func (c *composition) citations() []Citation {
	out := make([]Citation, 0, len(c.refs))
	for _, r := range c.refs {
		hit := c.hits[r.hit]
		c := Citation{N: r.n, DocID: hit.DocID, Title: hit.Title, Source: hit.Source, ChunkID: hit.ID, URL: urlOf(hit)}
		c.Page, c.Sheet, c.Rows = locate(hit.Metadata)
		out = append(out, c)
	}
	return out
}

// sources counts the distinct documents cited.
func (c *composition) sources() int {
	docs := map[string]bool{}
	for _, r := range c.refs {
		docs[c.hits[r.hit].DocID] = true
	}
	return len(docs)
}

// artifactName is the answer artifact's name: summary or report.
func (c *composition) artifactName() string {
	if c.report {
		return "report"
	}
	return "summary"
}

// stream publishes the parts not yet published as the answer artifact:
// the first chunk opens it (unless a streamed answer already did), later
// ones append, the last closes it.
func (c *composition) stream(ctx context.Context) error {
	parts := slices.DeleteFunc(slices.Clone(c.parts[c.emitted:]), func(p string) bool { return p == "" })
	if len(parts) == 0 && c.opened {
		parts = []string{""} // close what was streamed
	}
	for i, p := range parts {
		if i == len(parts)-1 {
			p = strings.TrimRight(p, "\n ")
		}
		if err := c.emit.Artifact(ctx, ArtifactID, c.artifactName(), p, c.opened || i > 0, i == len(parts)-1); err != nil {
			return err
		}
	}
	c.emitted, c.opened = len(c.parts), true
	return nil
}

// memoryLine mentions what the user told earlier, e.g. "You said you work
// with Go." It is empty without facts.
func (c *composition) memoryLine() string {
	if len(c.facts) == 0 {
		return ""
	}
	fs := c.facts[:min(len(c.facts), 3)]
	switch len(fs) {
	case 1:
		return "You said " + fs[0] + "."
	case 2:
		return "You said " + fs[0] + " and " + fs[1] + "."
	default:
		return "You said " + strings.Join(fs[:len(fs)-1], ", ") + ", and " + fs[len(fs)-1] + "."
	}
}

// nothingFound answers plainly that the search found nothing.
func (c *composition) nothingFound() {
	if m := c.memoryLine(); m != "" {
		c.add(m + "\n\n")
	}
	q := ""
	if c.query != "" {
		q = fmt.Sprintf(" about “%s”", c.query)
	}
	c.add(fmt.Sprintf("I found nothing%s in the indexed documents, so I cannot answer from them.", q))
}

// queryTerms are the terms the answer's sentences are ranked by: what
// the query searches for, not how it is asked ("compare", "in detail").
func (c *composition) queryTerms() []string {
	if q := strings.TrimSpace(c.understood.Search); q != "" {
		return terms(q)
	}
	return terms(c.query)
}

// extractive composes the answer from the hits' own sentences (the
// search and web hits; step outputs are listed whole), with a side-by-
// side section for a comparison, the steps' results, and what failed.
func (c *composition) extractive() {
	found := c.hits[:c.found]
	qt := c.queryTerms()
	var per [][]sentence
	used := map[string]bool{}
	if c.comparison != nil {
		per = c.sideBySide(*c.comparison, qt)
		for _, ss := range per {
			for _, s := range ss {
				used[s.text] = true
			}
		}
	}
	from := c.answerable()
	cands := slices.DeleteFunc(sentences(found), func(s sentence) bool { return used[s.text] || !from[s.hit] })
	score(cands, qt)
	c.lift(cands, c.symbols())
	k := c.k
	if per != nil && !c.report {
		k = 0 // a compared summary is its sides
	}
	chosen := pick(cands, k)
	if len(chosen) == 0 && per == nil {
		// Hits too short to hold a sentence: cite their openings.
		for h := range found[:min(len(found), 3)] {
			chosen = append(chosen, sentence{text: opening(c.hits[h].Text), hit: h})
		}
	}
	if c.report {
		c.renderReport(chosen, per)
		return
	}
	if m := c.memoryLine(); m != "" {
		c.add(m + "\n\n")
	}
	for i, s := range chosen {
		sep := " "
		if i == len(chosen)-1 {
			sep = "\n"
		}
		c.add(c.cited(s) + sep)
	}
	if per != nil {
		c.add(c.renderComparison(*c.comparison, per))
	}
	c.add(c.stepResults(c.found))
	c.add(c.limitations())
}

// cited renders a sentence with its citation: "Text. [n]".
func (c *composition) cited(s sentence) string {
	text := s.text
	if !strings.ContainsAny(text[len(text)-1:], ".!?\"')”’") {
		text += "."
	}
	return fmt.Sprintf("%s [%d]", text, c.cite(s.hit))
}

// renderReport lays the chosen sentences out as Overview (the two most
// relevant), the side-by-side section of a comparison, Findings (the
// rest, grouped per document section — the chunk's title, which carries
// the document's headings — in ranking order), Step results (other
// steps' outputs), Limitations (failed steps) and Sources.
func (c *composition) renderReport(chosen []sentence, per [][]sentence) {
	over := chosen[:min(2, len(chosen))]
	rest := slices.Clone(chosen[len(over):])
	var b strings.Builder
	b.WriteString("## Overview\n\n")
	if m := c.memoryLine(); m != "" {
		b.WriteString(m + "\n\n")
	}
	for i, s := range over {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(c.cited(s))
	}
	b.WriteString("\n\n")
	c.add(b.String())
	if per != nil {
		c.add(c.renderComparison(*c.comparison, per))
	}

	c.add("## Findings\n\n")
	if len(rest) == 0 {
		c.add("Nothing beyond the overview was found.\n\n")
	}
	slices.SortStableFunc(rest, byHitOrder)
	var docs []string
	group := map[string][]sentence{}
	for _, s := range rest {
		d := c.hits[s.hit].DocID + "\x00" + label(c.hits[s.hit])
		if _, ok := group[d]; !ok {
			docs = append(docs, d)
		}
		group[d] = append(group[d], s)
	}
	for _, d := range docs {
		b.Reset()
		first := c.hits[group[d][0].hit]
		fmt.Fprintf(&b, "### %s\n\n", label(first))
		for _, s := range group[d] {
			b.WriteString("- " + c.cited(s) + "\n")
		}
		b.WriteString("\n")
		c.add(b.String())
	}
	c.add(c.stepResults(c.found))
	c.add(c.limitations())
	c.add(c.sourcesSection())
}

// sourcesSection lists every citation, numbered as cited:
// "n. Title — source (chunk id)".
func (c *composition) sourcesSection() string {
	var b strings.Builder
	b.WriteString("## Sources\n\n")
	for _, r := range c.refs {
		h := c.hits[r.hit]
		fmt.Fprintf(&b, "%d. %s", r.n, label(h))
		if h.Source != "" && h.Source != label(h) {
			fmt.Fprintf(&b, " — %s", h.Source)
		}
		fmt.Fprintf(&b, " (chunk %s)\n", h.ID)
	}
	return b.String()
}

func label(h hit) string {
	if t := strings.TrimSpace(h.Title); t != "" {
		return t
	}
	return h.DocID
}

// opening is the start of a text, at most 40 words.
func opening(text string) string {
	w := strings.Fields(text)
	if len(w) > 40 {
		return strings.Join(w[:40], " ") + " …"
	}
	return strings.Join(w, " ")
}

// locate reads where in its file a chunk is from its metadata: a PDF
// page, a sheet and its rows. JSON numbers arrive as float64.
func locate(md map[string]any) (page int, sheet, rows string) {
	num := func(k string) int {
		switch v := md[k].(type) {
		case float64:
			return int(v)
		case int:
			return v
		}
		return 0
	}
	page = num("page")
	sheet, _ = md["sheet"].(string)
	if a, b := num("row_start"), num("row_end"); a > 0 {
		rows = strconv.Itoa(a)
		if b > a {
			rows += "-" + strconv.Itoa(b)
		}
	}
	return page, sheet, rows
}
