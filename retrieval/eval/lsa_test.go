package eval_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentbus/agentbus/corpus"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
)

// TestLSAProfile measures the LSA embedder against the hashing embedder
// on both labelled sets, with the index time of each: a model trained on
// every chunk of the shipped corpus first, and the model as
// agentbus --vector-model lsa grows it at index time (embedded.Config.LSA).
// It is a measurement, not a check, and takes about half a minute: run
//
//	AGENTBUS_LSA_EVAL=1 go test ./retrieval/eval -run TestLSAProfile -v
//
// (AGENTBUS_LSA_DIM sets the dimension, default 128).
func TestLSAProfile(t *testing.T) {
	if os.Getenv("AGENTBUS_LSA_EVAL") == "" {
		t.Skip("a measurement: set AGENTBUS_LSA_EVAL=1")
	}
	dim, _ := strconv.Atoi(os.Getenv("AGENTBUS_LSA_DIM"))
	start := time.Now()
	hash := shippedIndex(t)
	t.Logf("index time, %s: %s", hash.Embedder().Name(), time.Since(start).Round(time.Millisecond))
	for _, set := range []string{corpus.SetShipped, corpus.SetRealistic} {
		runSet(t, hash, set)
	}

	// Trained on every chunk at once, the best an LSA model of the corpus
	// can do.
	start = time.Now()
	ch, err := retrieval.NewChunker(retrieval.ChunkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	sc := bufio.NewScanner(corpus.Documents())
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var d retrieval.Document
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Chunk(d) {
			texts = append(texts, c.Title+"\n"+c.Text)
		}
	}
	m, err := llm.TrainLSA(t.Context(), texts, llm.LSAConfig{Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	trained := time.Since(start)
	lsa := shippedIndex(t, embedded.Config{Embedder: m})
	t.Logf("index time, %s trained on all %d chunks first: %s (training %s)", m.Name(), len(texts), time.Since(start).Round(time.Millisecond), trained.Round(time.Millisecond))
	for _, set := range []string{corpus.SetShipped, corpus.SetRealistic} {
		runSet(t, lsa, set)
	}

	// As agentbus --vector-model lsa does it: trained at index time as the
	// tenant grows (embedded.Config.LSA).
	start = time.Now()
	grown := shippedIndex(t, embedded.Config{LSA: &llm.LSAConfig{Dim: dim}})
	t.Logf("index time, %s: %s", grown.Name(), time.Since(start).Round(time.Millisecond))
	for _, set := range []string{corpus.SetShipped, corpus.SetRealistic} {
		runSet(t, grown, set)
	}
}
