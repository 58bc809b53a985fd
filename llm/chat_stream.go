package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// ErrStreamAborted: the caller's delta function stopped a stream.
var ErrStreamAborted = errors.New("llm: stream aborted by its reader")

// Stream sends a system and a user message asking for a streamed answer
// ("stream": true, the protocol's server-sent chunks) and calls delta with
// each piece of content as it arrives, in order. It returns the whole
// answer. A delta that returns an error stops the stream: Stream then
// returns that error wrapped in ErrStreamAborted. The Timeout bounds the
// whole stream.
func (c *Chat) Stream(ctx context.Context, system, user string, delta func(string) error) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(c.cfg.Model),
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(user)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	ctx, span := startSpan(ctx, "chat stream", c.cfg.Model, c.host())
	start := time.Now()
	var b strings.Builder
	var usage openai.CompletionUsage
	model := ""
	err := func() error {
		stream := c.service.NewStreaming(ctx, params)
		defer stream.Close()
		for stream.Next() {
			ch := stream.Current()
			if ch.Model != "" {
				model = ch.Model
			}
			if ch.Usage.TotalTokens > 0 {
				usage = ch.Usage
			}
			for _, choice := range ch.Choices {
				if choice.Index != 0 || choice.Delta.Content == "" {
					continue
				}
				b.WriteString(choice.Delta.Content)
				if err := delta(choice.Delta.Content); err != nil {
					return fmt.Errorf("%w: %w", ErrStreamAborted, err)
				}
			}
		}
		if err := stream.Err(); err != nil {
			return c.wrap(ctx, err)
		}
		if b.Len() == 0 {
			return ErrNoAnswer
		}
		return nil
	}()
	endSpan(span, model, usage.PromptTokens, usage.CompletionTokens, err)
	MeterModel(ctx, c.cfg.Model, usage.PromptTokens, usage.CompletionTokens)
	if c.cfg.Observe != nil {
		c.cfg.Observe(Call{Model: c.cfg.Model, Duration: time.Since(start), PromptTokens: usage.PromptTokens,
			CompletionTokens: usage.CompletionTokens, Err: err})
	}
	if err != nil {
		return b.String(), err
	}
	return b.String(), nil
}
