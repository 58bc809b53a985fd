package llm_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/llm"
)

// sseServer answers every chat request with the given server-sent events.
func sseServer(t *testing.T, events ...string) *llm.Chat {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	c, err := llm.NewChat(llm.ChatConfig{URL: srv.URL + "/v1", Model: "m", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func chunk(content string) string {
	return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":` +
		fmt.Sprintf("%q", content) + `}}]}`
}

func TestStreamDeliversEachDeltaInOrder(t *testing.T) {
	c := sseServer(t, chunk("Mutexes "), chunk("lock"), chunk(" [1]."),
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`,
		"[DONE]")
	var got []string
	text, err := c.Stream(t.Context(), "sys", "user", func(d string) error { got = append(got, d); return nil })
	if err != nil || text != "Mutexes lock [1]." || strings.Join(got, "|") != "Mutexes |lock| [1]." {
		t.Fatalf("text %q deltas %q err %v", text, got, err)
	}
}

func TestStreamStopsWhenItsReaderDoes(t *testing.T) {
	c := sseServer(t, chunk("a"), chunk("b"), chunk("c"), "[DONE]")
	stop := errors.New("enough")
	n := 0
	_, err := c.Stream(t.Context(), "sys", "user", func(string) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, llm.ErrStreamAborted) || !errors.Is(err, stop) || n != 2 {
		t.Fatalf("err %v after %d deltas", err, n)
	}
}

func TestStreamWithNoContentIsNoAnswer(t *testing.T) {
	c := sseServer(t, "[DONE]")
	if _, err := c.Stream(t.Context(), "sys", "user", func(string) error { return nil }); !errors.Is(err, llm.ErrNoAnswer) {
		t.Fatalf("err %v, want ErrNoAnswer", err)
	}
}
