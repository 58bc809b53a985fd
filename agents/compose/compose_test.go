package compose_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/compose"
)

var hits = []hit{
	{ID: "consumers#0", DocID: "consumers", Title: "Consumers", Source: "docs/consumers.md", Text: `# Consumers

A durable consumer acknowledges every message it processes. Unacknowledged messages are redelivered after the ack wait expires.
The consumer keeps its position on the server, e.g. across restarts of the client.`},
	{ID: "consumers#1", DocID: "consumers", Title: "Consumers", Source: "docs/consumers.md", Text: `Pull consumers fetch batches of messages on demand.

- A pull consumer acknowledges messages explicitly with Ack.
- Redelivered messages carry a delivery count header.`},
	{ID: "copy#0", DocID: "mirror", Title: "Mirror of consumers", Source: "mirror/consumers.md",
		Text: "A durable consumer acknowledges every message it processes. This page mirrors the consumer docs."},
	{ID: "kv#0", DocID: "kv", Title: "Key-value store", Source: "docs/kv.md",
		Text: "The key value store keeps the newest revision of each key. Watchers see every update to a bucket."},
}

func newAgent(t *testing.T, cfg compose.Config) *compose.Agent {
	t.Helper()
	a, err := compose.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSummarizeIsExtractiveAndCited(t *testing.T) {
	deps := map[string]string{"search": searchOutput("how do consumers acknowledge messages", hits...)}
	out, _ := run(t, newAgent(t, compose.Config{}), request(compose.CapabilitySummarize, `{"query":"how do consumers acknowledge messages"}`, deps))
	if out.Method != compose.MethodExtractive || out.FallbackReason != "" {
		t.Fatalf("method %q reason %q", out.Method, out.FallbackReason)
	}
	n := checkExtractive(t, out, hits)
	if n < 2 || n > 4 {
		t.Fatalf("%d cited sentences, want 2..4:\n%s", n, out.Answer)
	}
	first := claims(out.Answer)[0].text
	if !strings.Contains(first, "acknowledge") {
		t.Fatalf("first sentence %q does not answer the question", first)
	}
	// The mirrored sentence is said once, not twice.
	if c := strings.Count(out.Answer, "A durable consumer acknowledges every message"); c != 1 {
		t.Fatalf("duplicate sentence appears %d times:\n%s", c, out.Answer)
	}
	if strings.Contains(out.Answer, "# Consumers") || strings.Contains(out.Answer, "key value store") {
		t.Fatalf("a heading or an irrelevant sentence made it in:\n%s", out.Answer)
	}
	if out.SourcesUsed < 1 || out.SourcesUsed > len(out.Citations) {
		t.Fatalf("sources_used %d, citations %d", out.SourcesUsed, len(out.Citations))
	}
}

func TestDetailedReportHasSectionsAndSources(t *testing.T) {
	deps := map[string]string{"search": searchOutput("consumer acknowledges messages redelivered", hits...)}
	out, rec := run(t, newAgent(t, compose.Config{}), request(compose.CapabilityDetailedReport, `{"query":"consumer acknowledges messages redelivered","max_sentences":6}`, deps))
	a := out.Answer
	ov, fi, so := strings.Index(a, "## Overview"), strings.Index(a, "## Findings"), strings.Index(a, "## Sources")
	if ov != 0 || fi < ov || so < fi {
		t.Fatalf("sections out of order:\n%s", a)
	}
	if n := checkExtractive(t, out, hits); n < 3 || n > 6 {
		t.Fatalf("%d cited sentences, want 3..6:\n%s", n, a)
	}
	if !strings.Contains(a[fi:so], "### Consumers") {
		t.Fatalf("findings are not grouped per source:\n%s", a)
	}
	for _, c := range out.Citations {
		if !strings.Contains(a[so:], "(chunk "+c.ChunkID+")") {
			t.Fatalf("sources list lacks %s:\n%s", c.ChunkID, a)
		}
	}
	if len(rec.Chunks()) < 3 || rec.Chunks()[0].Name != "report" {
		t.Fatalf("%d chunks (%q), want one per section", len(rec.Chunks()), rec.Chunks()[0].Name)
	}
}

func TestNothingFound(t *testing.T) {
	for _, cap := range []string{compose.CapabilitySummarize, compose.CapabilityDetailedReport} {
		for name, deps := range map[string]map[string]string{
			"no hits":   {"search": searchOutput("quantum gravity")},
			"no search": {},
		} {
			t.Run(cap+"/"+name, func(t *testing.T) {
				srv := kittest.NewChatServer(t, kittest.Answer(200, `{"answer":"Invented. [1]"}`))
				out, _ := run(t, newAgent(t, compose.Config{LLM: srv.Chat(t)}),
					request(cap, `{"query":"quantum gravity"}`, deps))
				if !strings.Contains(out.Answer, "found nothing about “quantum gravity” in the indexed documents") ||
					len(out.Citations) != 0 || strings.Contains(out.Answer, "[1]") || out.SourcesUsed != 0 {
					t.Fatalf("answer %q citations %v", out.Answer, out.Citations)
				}
				if len(srv.Users()) != 0 {
					t.Fatal("the LLM was asked with nothing to answer from")
				}
			})
		}
	}
}

func TestMentionsRememberedFacts(t *testing.T) {
	mem := `{"stored":[],"recalled":[{"key":"acme.1","subject":"user","predicate":"works_with","object":"go",
		"sentence":"I work with Go.","you":"you work with Go"},{"key":"acme.2","sentence":"I live in Berlin."}],"method":"heuristic"}`
	for _, cap := range []string{compose.CapabilitySummarize, compose.CapabilityDetailedReport} {
		t.Run(cap, func(t *testing.T) {
			deps := map[string]string{"search": searchOutput("consumer acknowledges", hits...), "memory": mem}
			out, _ := run(t, newAgent(t, compose.Config{}), request(cap, `{"query":"consumer acknowledges"}`, deps))
			if !strings.Contains(out.Answer, "You said you work with Go and “I live in Berlin”.") {
				t.Fatalf("answer does not mention the facts:\n%s", out.Answer)
			}
			if len(out.Remembered) != 2 {
				t.Fatalf("remembered %q", out.Remembered)
			}
			checkExtractive(t, out, hits)
		})
	}
}

func TestRejects(t *testing.T) {
	a := newAgent(t, compose.Config{})
	for name, req := range map[string]agents.Request{
		"unknown capability": request("translate", `{}`, nil),
		"unknown field":      request(compose.CapabilitySummarize, `{"style":"poem"}`, nil),
		"too many sentences": request(compose.CapabilitySummarize, `{"max_sentences":500}`, nil),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := a.Handle(t.Context(), req, &kittest.Recorder{}); !errors.Is(err, agents.ErrPermanent) {
				t.Fatalf("err = %v, want ErrPermanent", err)
			}
		})
	}
	if _, err := compose.New(compose.Config{SummarySentences: -1}); err == nil {
		t.Fatal("negative SummarySentences accepted")
	}
}

func TestCard(t *testing.T) {
	c := newAgent(t, compose.Config{}).Card()
	if len(c.Capabilities) != 2 || c.Capabilities[0] != "summarize" || c.Capabilities[1] != "detailed_report" {
		t.Fatalf("capabilities %q", c.Capabilities)
	}
}
