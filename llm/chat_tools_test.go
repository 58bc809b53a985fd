package llm_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentbus/agentbus/llm"
)

// TestConverseToolCalls: Converse sends the tools and the conversation
// (an assistant's tool calls, a tool's result) as OpenAI tool calling
// does, returns the model's tool calls, and meters the tokens.
func TestConverseToolCalls(t *testing.T) {
	var got struct {
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name, Arguments string
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("request %s: %v", b, err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
			"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"search","arguments":"{\"query\":\"go\"}"}}]}}],
			"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`)
	}))
	defer srv.Close()
	chat, err := llm.NewChat(llm.ChatConfig{URL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, spent := llm.WithMeter(context.Background())
	turn, err := chat.Converse(ctx, []llm.Message{
		{Role: llm.RoleSystem, Content: "s"},
		{Role: llm.RoleUser, Content: "u"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "echo", Arguments: `{}`}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: `"ok"`},
	}, []llm.Tool{{Name: "search", Description: "searches", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(turn.ToolCalls) != 1 || turn.ToolCalls[0] != (llm.ToolCall{ID: "call_2", Name: "search", Arguments: `{"query":"go"}`}) || turn.FinishReason != "tool_calls" {
		t.Fatalf("turn %+v", turn)
	}
	if s := spent(); s.PromptTokens != 7 || s.CompletionTokens != 3 || s.Calls != 1 {
		t.Errorf("metered %+v", s)
	}
	if len(got.Tools) != 1 || got.Tools[0].Type != "function" || got.Tools[0].Function.Name != "search" || got.Tools[0].Function.Parameters["type"] != "object" {
		t.Errorf("tools sent %+v", got.Tools)
	}
	if len(got.Messages) != 4 || got.Messages[2].Role != "assistant" || len(got.Messages[2].ToolCalls) != 1 || got.Messages[2].ToolCalls[0].ID != "call_1" ||
		got.Messages[3].Role != "tool" || got.Messages[3].ToolCallID != "call_1" {
		t.Errorf("messages sent %+v", got.Messages)
	}
	if _, err := chat.Converse(ctx, []llm.Message{{Role: "robot"}}, nil); err == nil {
		t.Error("an unknown role was sent")
	}
}
