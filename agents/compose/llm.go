package compose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
)

// ErrBadCitation is why an LLM answer is refused: it cites a passage it
// was not given, or none at all.
var ErrBadCitation = errors.New("compose: answer cites no given passage")

// maxPassageChars bounds each passage in the prompt.
const maxPassageChars = 1500

const systemSummary = `You answer questions strictly from the numbered passages you are given.
Write 3 to 5 sentences of plain prose. End every sentence that uses a passage with its number in
square brackets, like [2]; cite only numbers that appear in the passages. Never add facts that
are not in the passages; if they do not answer the question, say so. Answer with a JSON object:
{"answer": "<markdown text>"}.`

const systemReport = `You write reports strictly from the numbered passages you are given.
Write markdown with two sections, "## Overview" (two or three sentences) and "## Findings"
(grouped per source or theme, with "### " subheadings and "- " bullets). End every sentence or
bullet that uses a passage with its number in square brackets, like [2]; cite only numbers that
appear in the passages. Do not write a sources section: it is added for you. Never add facts
that are not in the passages. Answer with a JSON object: {"answer": "<markdown text>"}.`

// citeRef finds citations: [3], and lists such as [1, 4] or [1][2].
var citeRef = regexp.MustCompile(`\[(\d+(?:\s*,\s*\d+)*)\]`)

// tryLLM asks the configured model for the answer and accepts it only if
// every number it cites is a passage it was given.
func (a *Agent) tryLLM(ctx context.Context, c *composition, emit agents.Emitter) (bool, string) {
	if a.cfg.LLM == nil {
		return false, ""
	}
	c.passages = c.passages[:0]
	for i := range c.hits {
		if i < min(c.found, a.cfg.Passages) || i >= c.found {
			c.passages = append(c.passages, i)
		}
	}
	passages := make([]hit, len(c.passages))
	for n, i := range c.passages {
		passages[n] = c.hits[i]
	}
	system := systemSummary
	if c.report {
		system = systemReport
	}
	user := c.prompt(passages)
	if s, ok := a.cfg.LLM.(Streamer); ok && a.cfg.StreamWindow >= 0 {
		return a.tryStream(ctx, c, s, system, user, len(passages))
	}
	var answer string
	var cited []int
	ok, reason := agentkit.TryLLM(ctx, emit, a.cfg.LLM, system, user, func(raw string) error {
		text, err := parseAnswer(raw)
		if err != nil {
			return err
		}
		ns, err := checkCitations(text, len(passages))
		if err != nil {
			return err
		}
		answer, cited = text, ns
		return nil
	})
	if !ok {
		return false, reason
	}
	c.fromLLM(answer, cited)
	return true, ""
}

// prompt is the user message: the question (a comparison's sides
// named), the conversation so far, what the user told earlier, the steps
// that failed, and the numbered passages.
func (c *composition) prompt(passages []hit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\n\n", c.query)
	if c.comparison != nil {
		names := make([]string, len(c.comparison.sides))
		for i, sd := range c.comparison.sides {
			names[i] = sd.Name
		}
		fmt.Fprintf(&b, "This compares %s: include a section \"## %s\" with a \"### \" subsection per side, "+
			"each cited.\n\n", strings.Join(names, " and "), strings.Join(names, " vs "))
	}
	if conv := c.conversation; conv != nil && (len(conv.History) > 0 || conv.Summary != "") {
		b.WriteString("Earlier in this conversation:\n")
		if conv.Summary != "" {
			b.WriteString("Summary: " + oneLine(conv.Summary, 600) + "\n")
		}
		for _, t := range conv.History {
			fmt.Fprintf(&b, "- Q: %s\n  A: %s\n", oneLine(t.Query, 200), oneLine(t.Answer, 400))
		}
		b.WriteString("\n")
	}
	if len(c.facts) > 0 {
		b.WriteString("The user told you earlier (mention what is relevant):\n")
		for _, f := range c.facts {
			b.WriteString("- " + f + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("Passages:\n")
	for i, h := range passages {
		text := strings.Join(strings.Fields(h.Text), " ")
		if r := []rune(text); len(r) > maxPassageChars {
			text = string(r[:maxPassageChars]) + " …"
		}
		fmt.Fprintf(&b, "\n[%d] %s", i+1, label(h))
		if h.Source != "" {
			fmt.Fprintf(&b, " (%s)", h.Source)
		}
		b.WriteString("\n" + text + "\n")
	}
	return b.String()
}

// parseAnswer takes the answer out of {"answer": "…"}; a server that
// ignored the JSON request may send the markdown itself.
func parseAnswer(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "{") {
		var v struct {
			Answer string `json:"answer"`
		}
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return "", fmt.Errorf("compose: answer is not the JSON object asked for: %w", err)
		}
		raw = strings.TrimSpace(v.Answer)
	}
	if raw == "" {
		return "", errors.New("compose: empty answer")
	}
	return raw, nil
}

// checkCitations returns the distinct passage numbers text cites, in
// ascending order, or ErrBadCitation naming a number out of [1, n].
func checkCitations(text string, n int) ([]int, error) {
	var out []int
	for _, m := range citeRef.FindAllStringSubmatch(text, -1) {
		for _, f := range strings.Split(m[1], ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || k < 1 || k > n {
				return nil, fmt.Errorf("%w: it cites [%s], but there are %d passages", ErrBadCitation, strings.TrimSpace(f), n)
			}
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: it cites nothing", ErrBadCitation)
	}
	slices.Sort(out)
	return out, nil
}

// setRefs numbers the citations of a checked LLM answer: its [n] are
// passage numbers, which stay the citation numbers.
func (c *composition) setRefs(cited []int) {
	c.refs = make([]ref, 0, len(cited))
	for _, n := range cited {
		c.refs = append(c.refs, ref{n: n, hit: c.passages[n-1]})
	}
}

// fromLLM takes a checked LLM answer. Its [n] are passage numbers, which
// stay the citation numbers: passage n is hit n-1, and the citation list
// holds the cited ones only. The answer streams one paragraph per chunk.
func (c *composition) fromLLM(answer string, cited []int) {
	c.setRefs(cited)
	paras := strings.Split(answer, "\n\n")
	// The memory line opens the answer, after a leading heading.
	at := 0
	if strings.HasPrefix(paras[0], "#") {
		at = 1
	}
	if m := c.memoryLine(); m != "" {
		paras = slices.Insert(paras, at, m)
	}
	for _, p := range paras {
		if p = strings.TrimSpace(p); p != "" {
			c.add(p + "\n\n")
		}
	}
	c.add(c.limitations())
	if c.report {
		c.add(c.sourcesSection())
	}
}
