package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/agents/search"
	"github.com/agentbus/agentbus/workflow"
)

// TestLLMAnswerStreamsToAnSSEClient: with a model that streams, a client
// following the workflow over SSE gets the answer as several artifact
// chunks (the first opening it, the rest appending) before the workflow
// completes, and every step's output as its own artifact; what it
// assembles is the answer in the result.
func TestLLMAnswerStreamsToAnSSEClient(t *testing.T) {
	ix := indexed(t, consumersDoc)
	const written = "A durable consumer acknowledges each message it processes [1]. Messages left unacknowledged come again after the ack wait [1]."
	model := kittest.NewChatServer(t, kittest.Answer(200, written))
	sa, err := search.New(search.Config{Backend: ix})
	if err != nil {
		t.Fatal(err)
	}
	// a chunk per token, so that the test sees more than one
	ca, err := compose.New(compose.Config{LLM: model.Chat(t), StreamWindow: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	s := startStackWith(t, stackOptions{agents: []agents.Agent{sa, ca}})

	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	body := `{"workflow_id":"streamed","plan":{"steps":[{"id":"search","capability":"search","input":{"query":"how does a consumer acknowledge"}},` +
		`{"id":"summarize","capability":"summarize","depends_on":["search"],"input":{"query":"how does a consumer acknowledge"}}]}}`
	resp, err := http.Post(s.base()+"/v1/workflows", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base()+"/v1/workflows/streamed/events", nil)
	sse, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Body.Close()
	type artifact struct {
		ID     string          `json:"artifact_id"`
		Data   json.RawMessage `json:"data"`
		Append bool            `json:"append"`
		Last   bool            `json:"last_chunk"`
	}
	var chunks []artifact
	stepOutputs := map[string]bool{}
	var result compose.Output
	sc := bufio.NewScanner(sse.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var f struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("frame %s: %v", line, err)
		}
		if f.Type == "status" { // a completed step's output comes with its status
			var st struct {
				Artifact *artifact `json:"artifact"`
			}
			if err := json.Unmarshal(f.Data, &st); err != nil {
				t.Fatal(err)
			}
			if st.Artifact != nil {
				stepOutputs[st.Artifact.ID] = true
			}
		}
		if f.Type == "artifact" {
			var a artifact
			if err := json.Unmarshal(f.Data, &a); err != nil {
				t.Fatal(err)
			}
			if a.ID == compose.ArtifactID {
				chunks = append(chunks, a)
			} else {
				stepOutputs[a.ID] = true
			}
		}
		if f.Type == "complete" {
			var c struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(f.Data, &c); err != nil || json.Unmarshal(c.Result, &result) != nil {
				t.Fatalf("complete %s", f.Data)
			}
			break
		}
	}
	if result.Method != compose.MethodLLM || result.Answer != written {
		t.Fatalf("result method %q answer %q", result.Method, result.Answer)
	}
	if len(chunks) < 3 {
		t.Fatalf("%d answer chunks before complete, want the answer streamed", len(chunks))
	}
	var b strings.Builder
	for i, c := range chunks {
		var text string
		if json.Unmarshal(c.Data, &text) != nil || c.Append != (i > 0) || c.Last != (i == len(chunks)-1) {
			t.Fatalf("chunk %d of %d: %+v", i, len(chunks), c)
		}
		b.WriteString(text)
	}
	if b.String() != written {
		t.Fatalf("assembled %q, want %q", b.String(), written)
	}
	for _, step := range []string{"search", "summarize"} {
		if !stepOutputs[workflow.StepArtifactID(step)] {
			t.Fatalf("no output artifact for step %s (got %v)", step, stepOutputs)
		}
	}
}
