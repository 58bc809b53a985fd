package compose_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/compose"
)

// streamed joins the artifact chunks rec was given after checking them:
// text, the first opens the artifact, the others append, only the last
// closes it.
func streamed(t *testing.T, rec *kittest.Recorder) string {
	t.Helper()
	chunks := rec.Chunks()
	if len(chunks) == 0 {
		t.Fatal("no artifact chunks")
	}
	var b strings.Builder
	for i, c := range chunks {
		s, ok := c.Data.(string)
		if !ok || c.ID != compose.ArtifactID || c.Append != (i > 0) || c.Last != (i == len(chunks)-1) {
			t.Fatalf("chunk %d of %d: %+v", i, len(chunks), c)
		}
		b.WriteString(s)
	}
	return b.String()
}

type hit struct {
	ID     string `json:"id"`
	DocID  string `json:"doc_id"`
	Title  string `json:"title,omitempty"`
	Text   string `json:"text"`
	Source string `json:"source,omitempty"`
	Score  float64
}

func searchOutput(query string, hits ...hit) string {
	b, _ := json.Marshal(map[string]any{"query": query, "hits": hits, "profiles_used": []string{"bm25"},
		"profiles_failed": []any{}, "ensemble": false, "backend": "test", "took_ms": 1})
	return string(b)
}

func request(capability, input string, deps map[string]string) agents.Request {
	r := agents.Request{TenantID: "acme", WorkflowID: "w1", StepID: capability, Capability: capability,
		Attempt: 1, Delivery: 1, Query: "workflow query", Input: json.RawMessage(input),
		DependencyOutputs: map[string]json.RawMessage{}}
	for k, v := range deps {
		r.DependencyOutputs[k] = json.RawMessage(v)
	}
	return r
}

func run(t *testing.T, a *compose.Agent, req agents.Request) (compose.Output, *kittest.Recorder) {
	t.Helper()
	out, rec := kittest.Run[compose.Output](t, a, agentkit.OutputSchema(req.Capability), req)
	if got := streamed(t, rec); got != out.Answer {
		t.Fatalf("streamed answer differs from the output:\nstreamed %q\noutput   %q", got, out.Answer)
	}
	return out, rec
}

// citation is a citation marker in an answer.
var citation = regexp.MustCompile(`\[(\d+)\]`)

type claim struct {
	text string
	n    int
}

// claims returns every cited sentence of the answer with its citation:
// the text between the previous marker (or the line's start, or a "- ")
// and the marker.
func claims(answer string) []claim {
	var out []claim
	for line := range strings.Lines(answer) {
		line = strings.TrimPrefix(strings.TrimSpace(line), "- ")
		prev := 0
		for _, m := range citation.FindAllStringSubmatchIndex(line, -1) {
			n, _ := strconv.Atoi(line[m[2]:m[3]])
			out = append(out, claim{strings.TrimSpace(line[prev:m[0]]), n})
			prev = m[1]
		}
	}
	return out
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkExtractive fails unless every cited sentence is text of the chunk
// its citation names, and every citation is used.
func checkExtractive(t *testing.T, out compose.Output, hits []hit) int {
	t.Helper()
	byN := map[int]compose.Citation{}
	for _, c := range out.Citations {
		byN[c.N] = c
	}
	cl := claims(out.Answer)
	used := map[int]bool{}
	for _, c := range cl {
		ci, ok := byN[c.n]
		if !ok {
			t.Fatalf("answer cites [%d], not in citations %+v", c.n, out.Citations)
		}
		used[c.n] = true
		i := slices.IndexFunc(hits, func(h hit) bool { return h.ID == ci.ChunkID })
		if i < 0 || hits[i].DocID != ci.DocID {
			t.Fatalf("citation %+v names no hit", ci)
		}
		text := strings.TrimSuffix(c.text, ".")
		if !strings.Contains(normalize(hits[i].Text), normalize(text)) {
			t.Fatalf("sentence %q cites [%d] = %s, which does not contain it:\n%s", c.text, c.n, ci.ChunkID, hits[i].Text)
		}
	}
	if len(used) != len(out.Citations) {
		t.Fatalf("citations %+v, but the answer uses %v", out.Citations, used)
	}
	return len(cl)
}
