package compose

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/agents"
)

// Bounds of a step source: how much of a step's output an answer quotes.
const (
	maxStepChars  = 600
	maxStepFields = 12
)

// stepOutput is the part of any dependency's output the composer probes:
// hits make it a search, an answer or a text make it prose.
type stepOutput struct {
	Query string `json:"query"`
	// Hits, even null or empty, make the step a search.
	Hits   json.RawMessage `json:"hits"`
	Answer string          `json:"answer"`
	Text   string          `json:"text"`
	// Summary is another composer's or a summariser's short form.
	Summary string `json:"summary"`
	// Sides are a comparison's sides, with the hits found for each.
	Sides []side `json:"sides"`
}

// stepSource is a step of the plan whose output is neither search hits
// nor web documents nor memory: the answer reports and cites it whole.
type stepSource struct {
	step string
	text string
}

// gathered is what the composer has to answer from: the search hits of
// every search-like dependency (merged, best of each first), the query a
// search ran, and every other dependency's output.
type gathered struct {
	hits  []hit
	query string
	sides []side
	steps []stepSource
}

// gather reads every dependency of the step. Dependencies are taken in
// step-id order, so that the same outputs make the same answer. Memory
// and a web graph's select are left to remembered and webHits; a null
// output (an optional step that failed) is left to the problems.
func gather(req agents.Request) gathered {
	var g gathered
	ids := make([]string, 0, len(req.DependencyOutputs))
	for id := range req.DependencyOutputs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var lists [][]hit
	for _, id := range ids {
		raw := bytes.TrimSpace(req.DependencyOutputs[id])
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || isOf(id, "memory") || isOf(id, selectCapability) {
			continue
		}
		var out stepOutput
		if raw[0] == '{' && json.Unmarshal(raw, &out) == nil && out.Hits != nil {
			var hits []hit
			_ = json.Unmarshal(out.Hits, &hits) // hits that are not a list are none
			lists = append(lists, usable(hits))
			if g.query == "" {
				g.query = strings.TrimSpace(out.Query)
			}
			if g.sides == nil {
				g.sides = out.Sides
			}
			continue
		}
		if text := prose(raw, out); text != "" {
			g.steps = append(g.steps, stepSource{step: id, text: text})
		}
	}
	g.hits = interleave(lists)
	return g
}

// isOf reports whether a step id is a capability's step: the capability
// itself or it with a suffix ("memory", "memory-2").
func isOf(id, capability string) bool {
	return id == capability || (strings.HasPrefix(id, capability) && len(id) > len(capability) &&
		strings.ContainsRune("-_.", rune(id[len(capability)])))
}

// interleave merges ranked lists, best of each first, each chunk once.
func interleave(lists [][]hit) []hit {
	if len(lists) == 1 {
		return lists[0]
	}
	var out []hit
	seen := map[string]bool{}
	for i := 0; ; i++ {
		more := false
		for _, l := range lists {
			if i >= len(l) {
				continue
			}
			more = true
			if !seen[l[i].ID] {
				seen[l[i].ID] = true
				out = append(out, l[i])
			}
		}
		if !more {
			return out
		}
	}
}

// prose is a step's output as text for people: its answer, text or
// summary when it has one, a bare string as is, otherwise its fields as
// "name: value" pairs, bounded to maxStepChars.
func prose(raw json.RawMessage, out stepOutput) string {
	text := cmp.Or(strings.TrimSpace(out.Answer), strings.TrimSpace(out.Summary), strings.TrimSpace(out.Text))
	if text == "" {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return ""
		}
		var parts []string
		flatten("", v, &parts)
		text = strings.Join(parts, "; ")
	}
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > maxStepChars {
		text = string(r[:maxStepChars]) + " …"
	}
	return text
}

// flatten writes a JSON value's leaves as "path: value", at most
// maxStepFields of them; method and bookkeeping fields say nothing to
// a reader and are left out.
func flatten(path string, v any, out *[]string) {
	if len(*out) >= maxStepFields {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			if k != "method" && k != "fallback_reason" && k != "query" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			flatten(join(path, k), x[k], out)
		}
	case []any:
		for i, e := range x {
			flatten(join(path, fmt.Sprint(i)), e, out)
		}
	case nil:
	default:
		s := strings.TrimSpace(fmt.Sprint(x))
		if s == "" {
			return
		}
		if path == "" {
			*out = append(*out, s)
			return
		}
		*out = append(*out, path+": "+s)
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// stepHit makes a step source citable: a hit whose document is the step.
func stepHit(s stepSource) hit {
	return hit{ID: StepChunkID(s.step), DocID: "step:" + s.step, Title: "step " + s.step, Text: s.text, Source: "step " + s.step}
}

// StepChunkID is what a citation of a step's output names as its chunk:
// the step's output artifact, "<step>.output".
func StepChunkID(step string) string { return step + ".output" }

// stepResults renders the step sources as a list, each cited:
// "- **step translate**: … [n]". The hits of the steps are at from on.
func (c *composition) stepResults(from int) string {
	if from >= len(c.hits) {
		return ""
	}
	var b strings.Builder
	if c.report {
		b.WriteString("## Step results\n\n")
	} else {
		b.WriteString("\n")
	}
	for i := from; i < len(c.hits); i++ {
		h := c.hits[i]
		fmt.Fprintf(&b, "- **%s**: %s [%d]\n", h.Title, h.Text, c.cite(i))
	}
	b.WriteString("\n")
	return b.String()
}
