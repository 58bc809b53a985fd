package kittest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/llm"
)

// Model is the model name the ChatServer's clients send.
const Model = "test-model"

// Reply answers one chat request, given its system and user messages,
// with an HTTP status and the assistant's content (or, for a status of
// 400 and above, the API error's message).
type Reply func(system, user string) (status int, content string)

// Answer is a Reply that answers every request alike.
func Answer(status int, content string) Reply {
	return func(string, string) (int, string) { return status, content }
}

// ChatServer is a local HTTP server that speaks the OpenAI
// chat-completions protocol (POST /v1/chat/completions with a system and
// a user message; with "stream": true the answer comes as server-sent
// chunks, a token each) and records the prompts it is sent. It is safe for
// concurrent use and closes when its test ends.
type ChatServer struct {
	*httptest.Server
	mu             sync.Mutex
	systems, users []string
}

// NewChatServer starts a ChatServer that answers with reply.
func NewChatServer(t testing.TB, reply Reply) *ChatServer {
	t.Helper()
	s := &ChatServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			apiError(w, http.StatusNotFound, "no such route")
			return
		}
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			apiError(w, http.StatusBadRequest, "bad request: want a system and a user message")
			return
		}
		system, user := req.Messages[0].Content, req.Messages[1].Content
		s.mu.Lock()
		s.systems = append(s.systems, system)
		s.users = append(s.users, user)
		s.mu.Unlock()
		status, content := reply(system, user)
		if status >= 400 {
			apiError(w, status, content)
			return
		}
		if req.Stream {
			streamTokens(w, req.Model, content)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
	}))
	t.Cleanup(s.Close)
	return s
}

// streamTokens answers a request with "stream": true as the protocol's
// server-sent events: one chat.completion.chunk per token of content (a
// word with the space before it), flushed each, then [DONE].
func streamTokens(w http.ResponseWriter, model, content string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = w.Write([]byte("data: " + string(b) + "\n\n"))
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, tok := range Tokens(content) {
		send(chunk(map[string]any{"content": tok}, nil))
	}
	send(chunk(map[string]any{}, "stop"))
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
}

// Tokens splits content the way the ChatServer streams it: each word
// with the spaces before it, so that the tokens join to content.
func Tokens(content string) []string {
	var out []string
	start := 0
	for i := 1; i < len(content); i++ {
		if content[i] == ' ' && content[i-1] != ' ' {
			out = append(out, content[start:i])
			start = i
		}
	}
	if start < len(content) {
		out = append(out, content[start:])
	}
	return out
}

func apiError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": message}})
}

// Systems returns the system prompts received so far, oldest first.
func (s *ChatServer) Systems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.systems)
}

// Users returns the user messages received so far, oldest first.
func (s *ChatServer) Users() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.users)
}

// Chat returns an llm.Chat that talks to s.
func (s *ChatServer) Chat(t testing.TB) *llm.Chat {
	t.Helper()
	c, err := llm.NewChat(llm.ChatConfig{URL: s.URL + "/v1", Model: Model, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Chat starts a ChatServer that answers every request with status and
// content and returns an llm.Chat that talks to it, and the server.
func Chat(t testing.TB, status int, content string) (*llm.Chat, *ChatServer) {
	t.Helper()
	s := NewChatServer(t, Answer(status, content))
	return s.Chat(t), s
}
