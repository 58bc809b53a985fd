package compose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/llm"
)

// chunk is one artifact event.
type chunk struct {
	id, name, data string
	appendChunk    bool
	last           bool
}

// recorder is an agents.Emitter that keeps what it was given.
type recorder struct {
	mu       sync.Mutex
	progress []string
	chunks   []chunk
}

func (r *recorder) Progress(_ context.Context, _ float64, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, msg)
	return nil
}

func (r *recorder) Artifact(_ context.Context, id, name string, data any, appendChunk, last bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := data.(string)
	if !ok {
		return fmt.Errorf("artifact data %T, want string", data)
	}
	r.chunks = append(r.chunks, chunk{id, name, s, appendChunk, last})
	return nil
}

// streamed joins the artifact chunks after checking their flags: the
// first opens the artifact, the others append, only the last closes it.
func (r *recorder) streamed(t *testing.T) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.chunks) == 0 {
		t.Fatal("no artifact chunks")
	}
	var b strings.Builder
	for i, c := range r.chunks {
		if c.id != compose.ArtifactID || c.appendChunk != (i > 0) || c.last != (i == len(r.chunks)-1) {
			t.Fatalf("chunk %d of %d: %+v", i, len(r.chunks), c)
		}
		b.WriteString(c.data)
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

func run(t *testing.T, a *compose.Agent, req agents.Request) (compose.Output, *recorder) {
	t.Helper()
	rec := &recorder{}
	raw, err := a.Handle(t.Context(), req, rec)
	if err != nil {
		t.Fatal(err)
	}
	var out compose.Output
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if got := rec.streamed(t); got != out.Answer {
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

// chatServer speaks the OpenAI chat-completions protocol and answers with
// answer(user message).
type chatServer struct {
	*httptest.Server
	mu    sync.Mutex
	users []string
}

func newChatServer(t *testing.T, answer func(user string) string) *chatServer {
	t.Helper()
	s := &chatServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		user := req.Messages[1].Content
		s.mu.Lock()
		s.users = append(s.users, user)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer(user)}}},
		})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.users)
}

func newChat(t *testing.T, url string) *llm.Chat {
	t.Helper()
	c, err := llm.NewChat(llm.ChatConfig{URL: url + "/v1", Model: "test-model", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
