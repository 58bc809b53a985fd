package llm

import (
	"context"
	"errors"
	"time"
)

// Call describes one finished chat completion for ChatConfig.Observe: the
// model, how long it took (retries included), the tokens the server
// reported (0 when it reported none) and the error, if any.
type Call struct {
	Model            string
	Duration         time.Duration
	PromptTokens     int64
	CompletionTokens int64
	Err              error
}

// Outcome is the call's outcome as a bounded label: "ok", "timeout",
// "status" (the server answered with an error status), "no_answer" or
// "error" (anything else: a transport error).
func (c Call) Outcome() string {
	var se *StatusError
	switch {
	case c.Err == nil:
		return "ok"
	case errors.Is(c.Err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(c.Err, &se):
		return "status"
	case errors.Is(c.Err, ErrNoAnswer):
		return "no_answer"
	}
	return "error"
}
