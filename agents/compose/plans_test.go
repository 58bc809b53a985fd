package compose_test

import (
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/events"
)

// syncHits are what a search for sync.Mutex and sync.RWMutex returns,
// with the unrelated hit a lexical search for "compare … detail" found.
var syncHits = []hit{
	{ID: "go/sync#3", DocID: "go/sync", Title: "package sync (sync) › type Mutex",
		Text: "A Mutex is a mutual exclusion lock. The zero value for a Mutex is an unlocked mutex. A Mutex must not be copied after first use."},
	{ID: "go/sync#5", DocID: "go/sync", Title: "package sync (sync) › type RWMutex",
		Text: "A RWMutex is a reader/writer mutual exclusion lock. The lock can be held by an arbitrary number of readers or a single writer. The zero value for a RWMutex is an unlocked mutex."},
	{ID: "go/runtime/pprof#22", DocID: "go/runtime/pprof", Title: "package pprof (runtime/pprof) › Mutex profile",
		Text: "The mutex profile tracks contention on mutexes, such as sync.Mutex, sync.RWMutex, and runtime-internal locks."},
	{ID: "go/crypto/ecdsa#2", DocID: "go/crypto/ecdsa", Title: "package ecdsa (crypto/ecdsa)",
		Text: "See PublicKey.Equal for details on how Curve is compared. The details of the comparison are described there."},
}

// A comparison gets a side-by-side section, each side cited from the
// documentation of that type; the framing words ("compare", "in detail")
// pull in no unrelated passage, and a profiler's page that merely names
// both types is beside the point.
func TestReportComparesSideBySide(t *testing.T) {
	q := "compare sync.Mutex and sync.RWMutex in detail"
	deps := map[string]string{"search": searchOutput(q, syncHits...)}
	out, _ := run(t, newAgent(t, compose.Config{}), request(compose.CapabilityDetailedReport, `{"query":"`+q+`"}`, deps))
	checkExtractive(t, out, syncHits)
	for _, want := range []string{"## sync.Mutex vs sync.RWMutex", "### sync.Mutex\n", "### sync.RWMutex\n"} {
		if !strings.Contains(out.Answer, want) {
			t.Fatalf("report lacks %q:\n%s", want, out.Answer)
		}
	}
	mutex := section(out.Answer, "### sync.Mutex\n")
	rw := section(out.Answer, "### sync.RWMutex\n")
	if !strings.Contains(mutex, "A Mutex is a mutual exclusion lock") || !strings.Contains(rw, "A RWMutex is a reader/writer") {
		t.Fatalf("sides say the wrong things:\nMutex: %s\nRWMutex: %s", mutex, rw)
	}
	for _, c := range out.Citations {
		if c.DocID != "go/sync" {
			t.Fatalf("cites %s, unrelated to the comparison:\n%s", c.DocID, out.Answer)
		}
	}
}

// section is the text from a heading to the next heading.
func section(answer, heading string) string {
	i := strings.Index(answer, heading)
	if i < 0 {
		return ""
	}
	rest := answer[i+len(heading):]
	if j := strings.Index(rest, "#"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// A composer at the end of any plan answers from every step's output,
// not only search hits: each step's result is listed and cited as the
// step's output.
func TestSummarizesAnyPlansOutputs(t *testing.T) {
	deps := map[string]string{
		"translate": `{"translation":"Hallo Welt","language":"de","method":"heuristic"}`,
		"sentiment": `{"answer":"The text is friendly."}`,
		"count":     `42`,
	}
	out, _ := run(t, newAgent(t, compose.Config{}), request(compose.CapabilitySummarize, `{"query":"translate and rate hello world"}`, deps))
	for _, want := range []string{"**step translate**: language: de; translation: Hallo Welt", "**step sentiment**: The text is friendly.", "**step count**: 42"} {
		if !strings.Contains(out.Answer, want) {
			t.Fatalf("answer lacks %q:\n%s", want, out.Answer)
		}
	}
	if strings.Contains(out.Answer, "method") {
		t.Fatalf("bookkeeping fields leaked:\n%s", out.Answer)
	}
	if len(out.Citations) != 3 {
		t.Fatalf("citations %+v, want one per step", out.Citations)
	}
	for _, c := range out.Citations {
		step := strings.TrimPrefix(c.DocID, "step:")
		if c.ChunkID != compose.StepChunkID(step) || !strings.Contains(out.Answer, "**step "+step+"**") {
			t.Fatalf("citation %+v names no listed step", c)
		}
	}
}

// An answer says which steps failed and what it lacks for it: a note
// after a summary, a Limitations section in a report.
func TestSaysWhatFailed(t *testing.T) {
	deps := map[string]string{"search": searchOutput("how do consumers acknowledge messages", hits...)}
	problems := []events.StepProblem{{StepID: "entity_extraction", Capability: "entity_extraction", Kind: events.ProblemFailed,
		Error: "agent entities: model unreachable"}}
	req := request(compose.CapabilitySummarize, `{"query":"how do consumers acknowledge messages"}`, deps)
	req.Problems = problems
	out, _ := run(t, newAgent(t, compose.Config{}), req)
	if !strings.Contains(out.Answer, "Note: the entity_extraction step failed (agent entities: model unreachable), so no date or metadata filters were applied") {
		t.Fatalf("summary does not say what failed:\n%s", out.Answer)
	}
	req = request(compose.CapabilityDetailedReport, `{"query":"how do consumers acknowledge messages"}`, deps)
	req.Problems = problems
	out, _ = run(t, newAgent(t, compose.Config{}), req)
	lim := section(out.Answer, "## Limitations\n")
	if !strings.Contains(lim, "- The entity_extraction step failed") || strings.Index(out.Answer, "## Limitations") > strings.Index(out.Answer, "## Sources") {
		t.Fatalf("report's limitations:\n%s", out.Answer)
	}
}
