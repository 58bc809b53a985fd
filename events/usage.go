package events

// Usage is what a step spent on models: the tokens its LLM calls
// reported. A worker puts it in its reply (step.completed and step.failed
// "usage"); the orchestrator sums it into the workflow's state, its
// complete event and its budget.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens int64 `json:"completion_tokens,omitempty"`
	// Calls counts the LLM calls.
	Calls int64 `json:"calls,omitempty"`
	// Models holds the tokens (prompt and completion) by model, as the
	// calls named it: what tenants' token limits are taken from.
	Models map[string]int64 `json:"models,omitempty"`
}

// Tokens is the prompt and completion tokens together.
func (u Usage) Tokens() int64 { return u.PromptTokens + u.CompletionTokens }

// Add returns u with v added; its Models is a new map, neither u's nor v's.
func (u Usage) Add(v Usage) Usage {
	out := Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens, Calls: u.Calls + v.Calls}
	if len(u.Models)+len(v.Models) > 0 {
		out.Models = make(map[string]int64, len(u.Models)+len(v.Models))
		for m, n := range u.Models {
			out.Models[m] += n
		}
		for m, n := range v.Models {
			out.Models[m] += n
		}
	}
	return out
}

// Budget bounds what a workflow may spend on models: Tokens (prompt and
// completion) over all its steps. Past it, OnExceed says what happens to
// the steps not yet dispatched: BudgetPause (the default) holds them for a
// decision (approve goes on without the bound, reject ends the workflow),
// BudgetFail fails the workflow with code budget_exceeded.
type Budget struct {
	Tokens   int64  `json:"tokens"`
	OnExceed string `json:"on_exceed,omitempty"`
}

// What a Budget does when it is used up.
const (
	BudgetPause = "pause"
	BudgetFail  = "fail"
)

// CodeBudgetExceeded is the error code of a workflow failed by its budget.
const CodeBudgetExceeded = "budget_exceeded"
