package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/llm"
)

// chatRequest is what an OpenAI-compatible server reads from
// POST /v1/chat/completions.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	auth string
}

// fakeServer speaks the chat-completions protocol: answer decides the
// status and the content (or the error message, for a status >= 400).
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []chatRequest
}

func newFakeServer(t *testing.T, answer func(r chatRequest) (int, string)) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		req.auth = r.Header.Get("Authorization")
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		status, content := answer(req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status >= 400 {
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": content, "type": "server_error"}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) got() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chatRequest(nil), f.requests...)
}

func newChat(t *testing.T, url string, mutate ...func(*llm.ChatConfig)) *llm.Chat {
	t.Helper()
	cfg := llm.ChatConfig{URL: url + "/v1", Model: "test-model", Timeout: 5 * time.Second}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := llm.NewChat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestChatCompleteSpeaksTheProtocol(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "must-not-leak")
	srv := newFakeServer(t, func(r chatRequest) (int, string) { return 200, "hi, " + r.Messages[1].Content })
	ctx := t.Context()

	keyed := newChat(t, srv.URL, func(c *llm.ChatConfig) { c.APIKey = "sk-test" })
	out, err := keyed.Complete(ctx, "be brief", "there")
	if err != nil || out != "hi, there" {
		t.Fatalf("Complete = %q, %v", out, err)
	}
	if _, err := newChat(t, srv.URL).Complete(ctx, "s", "u"); err != nil {
		t.Fatal(err)
	}
	reqs := srv.got()
	r := reqs[0]
	if r.Model != "test-model" || len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[0].Content != "be brief" ||
		r.Messages[1].Role != "user" || r.ResponseFormat != nil {
		t.Fatalf("request %+v", r)
	}
	if r.auth != "Bearer sk-test" {
		t.Fatalf("Authorization %q, want the configured key", r.auth)
	}
	if reqs[1].auth != "" {
		t.Fatalf("a chat without a key sent Authorization %q (the environment's OpenAI key?)", reqs[1].auth)
	}
	if name := keyed.Name(); !strings.Contains(name, "test-model at 127.0.0.1:") || strings.Contains(name, "sk-") {
		t.Fatalf("Name %q", name)
	}
}

func TestChatCompleteJSONAsksForJSONAndFallsBackWhenUnsupported(t *testing.T) {
	srv := newFakeServer(t, func(r chatRequest) (int, string) {
		if r.ResponseFormat != nil {
			return 400, "response_format is not supported by this model"
		}
		return 200, `{"ok":true}`
	})
	c := newChat(t, srv.URL)
	for range 2 {
		out, err := c.CompleteJSON(t.Context(), "s", "u")
		if err != nil || out != `{"ok":true}` {
			t.Fatalf("CompleteJSON = %q, %v", out, err)
		}
	}
	reqs := srv.got()
	if len(reqs) != 3 || reqs[0].ResponseFormat == nil || reqs[0].ResponseFormat.Type != "json_object" ||
		reqs[1].ResponseFormat != nil || reqs[2].ResponseFormat != nil {
		t.Fatalf("want json_object, then plain, then plain only; got %d requests: %+v", len(reqs), reqs)
	}
}

func TestChatErrors(t *testing.T) {
	release := make(chan struct{})
	blocking := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client hanging up only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select { // longer than any client timeout: until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(blocking.Close)
	t.Cleanup(func() { close(release) }) // runs first
	failing := newFakeServer(t, func(chatRequest) (int, string) { return 500, "model crashed" })
	empty := newFakeServer(t, func(chatRequest) (int, string) { return 200, "" })

	t.Run("timeout", func(t *testing.T) {
		c := newChat(t, blocking.URL, func(c *llm.ChatConfig) { c.Timeout = 200 * time.Millisecond })
		start := time.Now()
		_, err := c.Complete(t.Context(), "s", "u")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "within 200ms") {
			t.Fatalf("err = %v, want a timeout naming the limit", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("timeout took %s", d)
		}
	})
	t.Run("status", func(t *testing.T) {
		_, err := newChat(t, failing.URL).Complete(t.Context(), "s", "u")
		var se *llm.StatusError
		if !errors.As(err, &se) || se.StatusCode != 500 || !strings.Contains(err.Error(), "500 Internal Server Error: model crashed") {
			t.Fatalf("err = %v", err)
		}
		if n := len(failing.got()); n != 1 {
			t.Fatalf("%d requests, want 1: no retries by default", n)
		}
	})
	t.Run("no answer", func(t *testing.T) {
		if _, err := newChat(t, empty.URL).Complete(t.Context(), "s", "u"); !errors.Is(err, llm.ErrNoAnswer) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		_, err := newChat(t, dead.URL).Complete(t.Context(), "s", "u")
		if err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestChatConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  llm.ChatConfig
		says []string
	}{
		{"empty", llm.ChatConfig{}, []string{"needs URL", "needs Model"}},
		{"relative", llm.ChatConfig{URL: "localhost:8080/v1", Model: "m"}, []string{"not an absolute http(s) URL"}},
		{"password hidden", llm.ChatConfig{URL: "ftp://user:secret@host/v1", Model: "m"}, []string{"ftp://host/v1"}},
		{"negative", llm.ChatConfig{URL: "http://h/v1", Model: "m", Timeout: -1, Retries: -1}, []string{"timeout", "retries"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := llm.NewChat(c.cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
	if _, err := llm.NewChat(llm.ChatConfig{URL: "https://api.example.invalid/v1", Model: "m"}); err != nil {
		t.Fatal(err)
	}
}
