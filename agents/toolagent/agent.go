package toolagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/subflow"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
)

// Agent runs the tool-calling loop of capability "agent". It is safe for
// concurrent use.
type Agent struct {
	cfg      Config
	log      *slog.Logger
	children *subflow.Runner
}

var _ agents.Agent = (*Agent)(nil)

// New checks cfg and returns the agent.
func New(cfg Config) (*Agent, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	children, err := subflow.New(subflow.Config{Bus: cfg.Bus, Source: source, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("toolagent: %w", err)
	}
	return &Agent{cfg: cfg, log: cfg.Logger.With("component", "toolagent"), children: children}, nil
}

// Card describes the agent.
func (a *Agent) Card() agents.Card {
	return agents.Card{Name: "tool-agent", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Answers a question by calling tools (MCP tools, remote skills, agents) with " + a.cfg.Model.Name() +
			": each tool call runs as a child workflow; the answer cites the tool results it used.",
		Examples: []string{"look up the weather in Paris and tell me whether to take an umbrella"}}
}

// Input is the agent's step input; every field is optional.
type Input struct {
	// Query is the task; default the workflow's query.
	Query string `json:"query,omitempty"`
	// MaxIterations lowers the configured bound on model calls.
	MaxIterations int `json:"max_iterations,omitempty"`
}

// Output is what the agent returns: the model's final answer, the tool
// results it cites ([N] in the answer), and every call it made.
type Output struct {
	Answer     string     `json:"answer"`
	Citations  []Citation `json:"citations"`
	Method     string     `json:"method"`
	Model      string     `json:"model"`
	Iterations int        `json:"iterations"`
	Tokens     int64      `json:"tokens"`
	Calls      []Call     `json:"calls"`
	// SourcesUsed counts the cited tool results, as the composer counts
	// its passages.
	SourcesUsed int `json:"sources_used"`
}

// Citation is what [N] in the answer refers to: one tool call's result.
type Citation struct {
	N          int    `json:"n"`
	Tool       string `json:"tool"`
	WorkflowID string `json:"workflow_id"`
	ToolCallID string `json:"tool_call_id"`
}

// Call is one tool call and how its child workflow ended.
type Call struct {
	N          int          `json:"n"`
	ToolCallID string       `json:"tool_call_id"`
	Tool       string       `json:"tool"`
	WorkflowID string       `json:"workflow_id,omitempty"`
	Status     events.State `json:"status"`
	Error      string       `json:"error,omitempty"`
}

// Errors of a loop that ended without an answer; each is permanent: the
// step is not retried (its tool calls would run again).
var (
	ErrIterations = errors.New("toolagent: no final answer within the iteration bound")
	ErrTokens     = errors.New("toolagent: no final answer within the token bound")
	ErrTime       = errors.New("toolagent: no final answer within the time bound")
	ErrNoTools    = errors.New("toolagent: no tool is registered that this workflow may call")
)

// Handle runs the loop for one step.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in Input
	if len(req.Input) > 0 && string(req.Input) != "null" {
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return nil, fmt.Errorf("%w: toolagent: input: %w", agents.ErrPermanent, err)
		}
	}
	query := strings.TrimSpace(in.Query)
	if query == "" {
		query = strings.TrimSpace(req.Query)
	}
	if query == "" {
		return nil, fmt.Errorf("%w: toolagent: no query: the input's \"query\" and the workflow's are empty", agents.ErrPermanent)
	}
	bound := a.cfg.MaxIterations
	if in.MaxIterations > 0 {
		bound = min(bound, in.MaxIterations)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, a.cfg.MaxTime, ErrTime)
	defer cancel()
	tools, err := a.tools(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(tools) == 0 {
		return nil, fmt.Errorf("%w: %w", agents.ErrPermanent, ErrNoTools)
	}
	l := &loop{a: a, req: req, emit: emit, tools: tools, out: Output{Method: agentkit.MethodLLM, Model: a.cfg.Model.Name(), Calls: []Call{}}}
	l.msgs = []llm.Message{{Role: llm.RoleSystem, Content: systemPrompt}, {Role: llm.RoleUser, Content: query}}
	for l.out.Iterations < bound {
		done, err := l.turn(ctx)
		if err != nil {
			return nil, err
		}
		if done {
			return json.Marshal(l.out)
		}
	}
	return nil, fmt.Errorf("%w: %w: %d model calls, %d tool calls", agents.ErrPermanent, ErrIterations, l.out.Iterations, len(l.out.Calls))
}

// systemPrompt tells the model how to use the tools and cite them.
const systemPrompt = "You answer the user's request. Call the tools you need; each tool result comes back numbered [N]. " +
	"When you have what you need, answer in plain text and cite each tool result you rely on with its number in brackets, e.g. [1]."

// loop is one step's conversation.
type loop struct {
	a     *Agent
	req   agents.Request
	emit  agents.Emitter
	tools []llm.Tool
	msgs  []llm.Message
	out   Output
}

// turn asks the model once and runs the tool calls it makes; it reports
// whether the model gave its final answer.
func (l *loop) turn(ctx context.Context) (bool, error) {
	cfg := l.a.cfg
	if l.out.Tokens >= cfg.MaxTokens {
		return false, fmt.Errorf("%w: %w: %d tokens spent, the bound is %d", agents.ErrPermanent, ErrTokens, l.out.Tokens, cfg.MaxTokens)
	}
	turn, err := cfg.Model.Converse(ctx, l.msgs, l.tools)
	l.out.Iterations++
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrTime) {
			return false, fmt.Errorf("%w: %w (%s)", agents.ErrPermanent, ErrTime, cfg.MaxTime)
		}
		return false, fmt.Errorf("toolagent: model: %w", err)
	}
	l.out.Tokens += turn.PromptTokens + turn.CompletionTokens
	if len(turn.ToolCalls) == 0 {
		l.answer(turn.Content)
		return true, nil
	}
	l.msgs = append(l.msgs, llm.Message{Role: llm.RoleAssistant, Content: turn.Content, ToolCalls: turn.ToolCalls})
	for i, tc := range turn.ToolCalls {
		content := l.call(ctx, i, tc)
		l.msgs = append(l.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: content})
		if ctx.Err() != nil {
			if errors.Is(context.Cause(ctx), ErrTime) {
				return false, fmt.Errorf("%w: %w (%s): %d tool calls made", agents.ErrPermanent, ErrTime, cfg.MaxTime, len(l.out.Calls))
			}
			return false, context.Cause(ctx)
		}
	}
	return false, nil
}

// call runs one tool call as a child workflow and returns what the model
// is told of it: "[N] <result>" or why there is none.
func (l *loop) call(ctx context.Context, i int, tc llm.ToolCall) string {
	n := len(l.out.Calls) + 1
	c := Call{N: n, ToolCallID: tc.ID, Tool: tc.Name}
	defer func() { l.out.Calls = append(l.out.Calls, c) }()
	if !slices.ContainsFunc(l.tools, func(t llm.Tool) bool { return t.Name == tc.Name }) {
		c.Status, c.Error = events.StateRejected, fmt.Sprintf("no tool %q is offered", tc.Name)
		return fmt.Sprintf("[%d] error: %s", n, c.Error)
	}
	args := json.RawMessage(strings.TrimSpace(tc.Arguments))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		c.Status, c.Error = events.StateRejected, "the arguments are not JSON"
		return fmt.Sprintf("[%d] error: %s", n, c.Error)
	}
	c.WorkflowID = childID(l.req, l.out.Iterations, i, tc.Name, string(args))
	pct := float64(n) / float64(n+1) * 100
	_ = l.emit.Progress(ctx, pct, fmt.Sprintf("tool call [%d] %s: running as workflow %s", n, tc.Name, c.WorkflowID))
	start := time.Now()
	o := l.a.run(ctx, l.req, l.emit, c.WorkflowID, tc.Name, args, tc.ID)
	c.Status, c.Error = o.state, o.err
	msg := fmt.Sprintf("tool call [%d] %s: %s in %s", n, tc.Name, o.state, time.Since(start).Round(time.Millisecond))
	if o.err != "" {
		msg += ": " + o.err
	}
	_ = l.emit.Progress(context.WithoutCancel(ctx), pct, msg)
	if o.state != events.StateCompleted {
		return fmt.Sprintf("[%d] error: %s", n, o.err)
	}
	res := string(o.result)
	if len(res) > l.a.cfg.MaxResult {
		res = res[:l.a.cfg.MaxResult] + "… (cut)"
	}
	return fmt.Sprintf("[%d] %s", n, res)
}

// cited finds [N] in an answer.
var cited = regexp.MustCompile(`\[(\d+)\]`)

// answer records the final answer and the tool results it cites.
func (l *loop) answer(text string) {
	l.out.Answer = text
	l.out.Citations = []Citation{}
	seen := map[int]bool{}
	for _, m := range cited.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > len(l.out.Calls) || seen[n] || l.out.Calls[n-1].Status != events.StateCompleted {
			continue
		}
		seen[n] = true
		c := l.out.Calls[n-1]
		l.out.Citations = append(l.out.Citations, Citation{N: n, Tool: c.Tool, WorkflowID: c.WorkflowID, ToolCallID: c.ToolCallID})
	}
	slices.SortFunc(l.out.Citations, func(a, b Citation) int { return a.N - b.N })
	l.out.SourcesUsed = len(l.out.Citations)
}
