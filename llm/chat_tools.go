package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// Roles of the messages of a conversation (Converse).
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a tool-calling conversation: a system or
// user message's Content, an assistant's Content and ToolCalls, or a
// tool's result (Content) for the call ToolCallID.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
}

// Tool is a function the model may call: its name (a-z, A-Z, 0-9, _ and
// -, at most 64), what it does, and the JSON Schema of its arguments (nil:
// none).
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is one call the model asked for: its id (which the tool's
// result names), the tool, and the arguments as the model wrote them (JSON,
// not checked).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Turn is the model's answer to a conversation: text, tool calls, or
// both, and the tokens the call spent.
type Turn struct {
	Content                        string
	ToolCalls                      []ToolCall
	FinishReason                   string
	PromptTokens, CompletionTokens int64
}

// Converse sends a conversation and the tools the model may call
// (OpenAI tool calling: tools, tool_calls, role tool) and returns the
// first choice. It meters its tokens in ctx's meter and traces the call
// as Complete does. An answer with neither text nor tool calls is
// ErrNoAnswer.
func (c *Chat) Converse(ctx context.Context, messages []Message, tools []Tool) (Turn, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.cfg.Model)}
	for _, m := range messages {
		p, err := messageParam(m)
		if err != nil {
			return Turn{}, err
		}
		params.Messages = append(params.Messages, p)
	}
	for _, t := range tools {
		def := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = param.NewOpt(t.Description)
		}
		if len(t.Parameters) > 0 {
			var ps shared.FunctionParameters
			if err := json.Unmarshal(t.Parameters, &ps); err != nil {
				return Turn{}, fmt.Errorf("llm: tool %s: parameters are not a JSON object: %w", t.Name, err)
			}
			def.Parameters = ps
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	ctx, span := startSpan(ctx, "chat", c.cfg.Model, c.host())
	start := time.Now()
	res, err := c.service.New(ctx, params)
	if err != nil {
		err = c.wrap(ctx, err)
		endSpan(span, "", 0, 0, err)
		c.observe(Call{Model: c.cfg.Model, Duration: time.Since(start), Err: err})
		return Turn{}, err
	}
	endSpan(span, res.Model, res.Usage.PromptTokens, res.Usage.CompletionTokens, nil)
	MeterModel(ctx, c.cfg.Model, res.Usage.PromptTokens, res.Usage.CompletionTokens)
	call := Call{Model: c.cfg.Model, Duration: time.Since(start), PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens}
	turn := Turn{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens}
	if len(res.Choices) > 0 {
		ch := res.Choices[0]
		turn.Content, turn.FinishReason = ch.Message.Content, ch.FinishReason
		for _, tc := range ch.Message.ToolCalls {
			if tc.Type != "" && tc.Type != "function" {
				continue // custom tools are never offered
			}
			turn.ToolCalls = append(turn.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	if turn.Content == "" && len(turn.ToolCalls) == 0 {
		call.Err = ErrNoAnswer
	}
	c.observe(call)
	return turn, call.Err
}

func (c *Chat) observe(call Call) {
	if c.cfg.Observe != nil {
		c.cfg.Observe(call)
	}
}

// ErrRole is returned by Converse for a message whose role it does not
// know.
var ErrRole = errors.New("llm: unknown message role")

func messageParam(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case RoleUser:
		return openai.UserMessage(m.Content), nil
	case RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" {
			a.Content.OfString = param.NewOpt(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments}}})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("%w %q", ErrRole, m.Role)
}
