package compose_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/compose"
)

// assembled applies artifact chunks as a client does: a chunk that does
// not append replaces what came before. It fails unless only the last
// chunk closes the artifact.
func assembled(t *testing.T, chunks []kittest.Chunk) string {
	t.Helper()
	var b strings.Builder
	for i, c := range chunks {
		s, ok := c.Data.(string)
		if !ok || c.ID != compose.ArtifactID || c.Last != (i == len(chunks)-1) {
			t.Fatalf("chunk %d of %d: %+v", i, len(chunks), c)
		}
		if !c.Append {
			b.Reset()
		}
		b.WriteString(s)
	}
	return b.String()
}

// With a model that streams, the answer is published token by token (a
// chunk per token with a tiny window) while the model writes it, and its
// citations are still checked.
func TestLLMAnswerStreamsTokenByToken(t *testing.T) {
	answer := "Consumers acknowledge each message they process [1]. Pull consumers ack explicitly [2]."
	srv := kittest.NewChatServer(t, kittest.Answer(200, answer))
	a := newAgent(t, compose.Config{LLM: srv.Chat(t), StreamWindow: time.Nanosecond})
	deps := map[string]string{"search": searchOutput("how do consumers acknowledge", hits...)}
	out, rec := run(t, a, request(compose.CapabilitySummarize, `{"query":"how do consumers acknowledge"}`, deps))
	if out.Method != compose.MethodLLM || out.Answer != answer || len(out.Citations) != 2 {
		t.Fatalf("method %q answer %q citations %+v", out.Method, out.Answer, out.Citations)
	}
	chunks := rec.Chunks()
	// every token its own chunk, and the closing one
	if want := len(kittest.Tokens(answer)) + 1; len(chunks) != want {
		t.Fatalf("%d chunks, want %d (a token each and the close)", len(chunks), want)
	}
	if !strings.Contains(srv.Systems()[0], "Answer with the markdown text only.") {
		t.Fatalf("a streamed answer was asked for as JSON:\n%s", srv.Systems()[0])
	}
}

// A streamed answer that cites a passage it was not given is replaced by
// the extractive one: the replacement's first chunk does not append, and
// what a client assembles is the output's answer.
func TestStreamedAnswerWithBadCitationsIsReplaced(t *testing.T) {
	srv := kittest.NewChatServer(t, kittest.Answer(200, "Consumers acknowledge messages [9]."))
	a := newAgent(t, compose.Config{LLM: srv.Chat(t), StreamWindow: time.Nanosecond})
	deps := map[string]string{"search": searchOutput("consumer acknowledges", hits...)}
	out, rec := kittest.Run[compose.Output](t, a, agentkit.OutputSchema(compose.CapabilitySummarize),
		request(compose.CapabilitySummarize, `{}`, deps))
	if out.Method != compose.MethodExtractive || !strings.Contains(out.FallbackReason, "it cites [9]") ||
		!strings.Contains(out.FallbackReason, "streamed answer was replaced") {
		t.Fatalf("method %q reason %q", out.Method, out.FallbackReason)
	}
	chunks := rec.Chunks()
	if got := assembled(t, chunks); got != out.Answer {
		t.Fatalf("client assembles %q, output is %q", got, out.Answer)
	}
	if !chunks[0].Append && chunks[0].Data == "Consumers" {
		replaced := false
		for _, c := range chunks[1:] {
			replaced = replaced || !c.Append
		}
		if !replaced {
			t.Fatal("the extractive answer appended to the refused one")
		}
	}
	checkExtractive(t, out, hits)
}

// A server that answers in JSON though asked for markdown is not shown
// raw: the JSON is held back and its answer published when checked.
func TestStreamedJSONAnswerIsHeldBack(t *testing.T) {
	srv := kittest.NewChatServer(t, kittest.Answer(200, `{"answer":"Consumers acknowledge messages [1]."}`))
	out, rec := run(t, newAgent(t, compose.Config{LLM: srv.Chat(t), StreamWindow: time.Nanosecond}),
		request(compose.CapabilitySummarize, `{}`, map[string]string{"search": searchOutput("ack", hits...)}))
	if out.Method != compose.MethodLLM || out.Answer != "Consumers acknowledge messages [1]." {
		t.Fatalf("method %q answer %q", out.Method, out.Answer)
	}
	for _, c := range rec.Chunks() {
		if s, _ := c.Data.(string); strings.Contains(s, "{") {
			t.Fatalf("raw JSON published: %q", s)
		}
	}
}
