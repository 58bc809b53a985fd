package vector_test

import (
	"context"
	"testing"

	"github.com/agentbus/agentbus/llm/vector"
)

func TestLocalEmbedderIsDeterministicAndNormalised(t *testing.T) {
	e := vector.LocalEmbedder{}
	if e.Name() != "local-hash-256" {
		t.Fatalf("name %q", e.Name())
	}
	a, _ := e.Embed(context.Background(), []string{"search the documents", "search the documents", ""})
	if vector.Cosine(a[0], a[1]) < 0.9999 {
		t.Fatal("same text, different vectors")
	}
	if vector.Cosine(a[0], a[2]) != 0 {
		t.Fatal("empty text should be the zero vector")
	}
}

func TestLocalEmbedderRanksLexicalOverlap(t *testing.T) {
	e := vector.LocalEmbedder{Dim: 512}
	vs, _ := e.Embed(context.Background(), []string{
		"find documents about kubernetes networking",
		"Searches indexed documents and returns ranked hits. Examples: find documents about databases",
		"Summarises a set of hits into a short answer with citations",
	})
	if !(vector.Cosine(vs[0], vs[1]) > vector.Cosine(vs[0], vs[2])) {
		t.Fatalf("search description should be nearer: %f vs %f", vector.Cosine(vs[0], vs[1]), vector.Cosine(vs[0], vs[2]))
	}
}

func TestTokenize(t *testing.T) {
	got := vector.Tokenize("What is the NATS-server's JetStream, please?")
	want := []string{"nats", "server", "s", "jetstream"}
	if len(got) != len(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v want %v", got, want)
		}
	}
}
