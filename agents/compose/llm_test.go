package compose_test

import (
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/compose"
)

func TestLLMAnswerWithValidCitations(t *testing.T) {
	srv := kittest.NewChatServer(t, kittest.Answer(200, `{"answer":"Consumers acknowledge each message they process [1]. Pull consumers ack explicitly [2, 1]."}`))
	a := newAgent(t, compose.Config{LLM: srv.Chat(t), Passages: 3})
	deps := map[string]string{
		"search": searchOutput("how do consumers acknowledge", hits...),
		"memory": `{"recalled":[{"key":"acme.1","you":"you work with Go"}],"stored":[]}`,
	}
	out, _ := run(t, a, request(compose.CapabilitySummarize, `{"query":"how do consumers acknowledge"}`, deps))
	if out.Method != compose.MethodLLM || out.FallbackReason != "" {
		t.Fatalf("method %q reason %q", out.Method, out.FallbackReason)
	}
	if !strings.HasPrefix(out.Answer, "You said you work with Go.\n\nConsumers acknowledge each message") {
		t.Fatalf("answer %q", out.Answer)
	}
	if len(out.Citations) != 2 || out.Citations[0].N != 1 || out.Citations[0].ChunkID != hits[0].ID ||
		out.Citations[1].N != 2 || out.Citations[1].ChunkID != hits[1].ID || out.SourcesUsed != 1 {
		t.Fatalf("citations %+v sources %d", out.Citations, out.SourcesUsed)
	}
	p := srv.Users()
	if len(p) != 1 {
		t.Fatalf("%d requests", len(p))
	}
	for _, want := range []string{"Question: how do consumers acknowledge", "- you work with Go",
		"[1] Consumers (docs/consumers.md)", "[3] Mirror of consumers", "Pull consumers fetch batches"} {
		if !strings.Contains(p[0], want) {
			t.Fatalf("prompt lacks %q:\n%s", want, p[0])
		}
	}
	if strings.Contains(p[0], "[4]") {
		t.Fatalf("prompt holds more than Passages passages:\n%s", p[0])
	}
}

func TestLLMReportGetsSourcesAppended(t *testing.T) {
	srv := kittest.NewChatServer(t, kittest.Answer(200, `{"answer":"## Overview\n\nThe store keeps the newest revision [4].\n\n## Findings\n\n- Watchers see updates [4]."}`))
	a := newAgent(t, compose.Config{LLM: srv.Chat(t)})
	deps := map[string]string{"search": searchOutput("kv", hits...)}
	out, rec := run(t, a, request(compose.CapabilityDetailedReport, `{}`, deps))
	if out.Method != compose.MethodLLM || len(out.Citations) != 1 || out.Citations[0].N != 4 || out.Citations[0].DocID != "kv" {
		t.Fatalf("method %q citations %+v", out.Method, out.Citations)
	}
	if !strings.HasSuffix(out.Answer, "## Sources\n\n4. Key-value store — docs/kv.md (chunk kv#0)") {
		t.Fatalf("answer %q", out.Answer)
	}
	if len(rec.Chunks()) != 5 {
		t.Fatalf("%d chunks, want one per paragraph and the sources", len(rec.Chunks()))
	}
}

func TestLLMFallsBackOnBadAnswers(t *testing.T) {
	tests := []struct{ name, answer, reason string }{
		{"cites a passage it was not given", `{"answer":"Consumers ack [1]. Also [9]."}`, "it cites [9], but there are 4 passages"},
		{"cites nothing", `{"answer":"Consumers acknowledge messages."}`, "it cites nothing"},
		{"not the JSON asked for", `{"text": 1`, "not the JSON object"},
		{"empty", `{"answer":""}`, "empty answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := kittest.NewChatServer(t, kittest.Answer(200, tt.answer))
			a := newAgent(t, compose.Config{LLM: srv.Chat(t)})
			deps := map[string]string{"search": searchOutput("consumer acknowledges", hits...)}
			out, rec := run(t, a, request(compose.CapabilitySummarize, `{}`, deps))
			if out.Method != compose.MethodExtractive || !strings.Contains(out.FallbackReason, tt.reason) {
				t.Fatalf("method %q reason %q, want extractive because %q", out.Method, out.FallbackReason, tt.reason)
			}
			if len(rec.Messages()) == 0 || !strings.Contains(rec.Messages()[0], "used the heuristic") {
				t.Fatalf("progress %q", rec.Messages())
			}
			checkExtractive(t, out, hits)
		})
	}
}

func TestLLMPlainTextAnswerIsAccepted(t *testing.T) {
	srv := kittest.NewChatServer(t, kittest.Answer(200, "Consumers acknowledge messages [1]."))
	out, _ := run(t, newAgent(t, compose.Config{LLM: srv.Chat(t)}),
		request(compose.CapabilitySummarize, `{}`, map[string]string{"search": searchOutput("ack", hits...)}))
	if out.Method != compose.MethodLLM || out.Answer != "Consumers acknowledge messages [1]." {
		t.Fatalf("method %q answer %q", out.Method, out.Answer)
	}
}
