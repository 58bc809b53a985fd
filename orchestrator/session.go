package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// converse makes a submission with a session id a turn of that session:
// it loads the session (tenant- or user-scoped), resolves a follow-up
// against its turns (the submission's query becomes the resolved one) and
// returns the session state the checkpoint keeps for every step request.
func (o *Orchestrator) converse(ctx context.Context, tenant string, sub *events.WorkflowSubmitted) (*workflow.SessionState, error) {
	if sub.SessionID == "" || sub.Fork != nil {
		return nil, nil
	}
	if err := subjects.ValidSession(sub.SessionID); err != nil {
		return nil, fmt.Errorf("%w: session_id: %w", bus.ErrPoison, err)
	}
	if sub.User != "" {
		if err := subjects.ValidUser(sub.User); err != nil {
			return nil, fmt.Errorf("%w: user: %w", bus.ErrPoison, err)
		}
	}
	sess, err := o.sessions.Load(ctx, tenant, sub.User, sub.SessionID)
	if err != nil && !errors.Is(err, sessions.ErrNotFound) {
		return nil, fmt.Errorf("orchestrator: session %s: %w", sub.SessionID, err)
	}
	sess.SessionID = sub.SessionID
	conv := sess.Conversation(o.sessions.History(), "")
	st := &workflow.SessionState{ID: sub.SessionID}
	if sub.Plan == nil && sub.Query != "" {
		res, why := o.resolve(ctx, sub.Query, conv.History)
		if res.FollowUp {
			conv.OriginalQuery = sub.Query
			st.Resolved = why
			sub.Query = res.Query
		}
	}
	st.Conversation = conv
	return st, nil
}

// resolve rewrites a follow-up: by the Rewriter (an LLM) when there is
// one, checked, else (or if it fails) by sessions.Resolve.
func (o *Orchestrator) resolve(ctx context.Context, query string, history []events.Turn) (sessions.Resolution, string) {
	det := sessions.Resolve(query, history)
	if o.cfg.Rewriter == nil || len(history) == 0 || (!det.FollowUp && len(strings.Fields(query)) > 8) {
		return det, det.Why(query)
	}
	rewritten, err := o.rewrite(ctx, query, history)
	switch {
	case err != nil:
		why := det.Why(query)
		if why == "" {
			why = "not taken for a follow-up"
		}
		return det, fmt.Sprintf("LLM rewrite failed (%s); %s", reason(err), why)
	case strings.EqualFold(strings.TrimSpace(rewritten), strings.TrimSpace(query)):
		return sessions.Resolution{Query: query}, ""
	}
	last := history[len(history)-1]
	res := sessions.Resolution{Query: rewritten, FollowUp: true, Turn: last.N, Subject: "the conversation"}
	return res, fmt.Sprintf("follow-up rewritten by the LLM (%s): %q → %q", completerName(o.cfg.Rewriter), query, rewritten)
}

// maxRewrite bounds an LLM's rewritten query.
const maxRewrite = 400

// rewrite asks the model for the follow-up as a standalone query and
// checks the answer: one JSON object {"query": "…"}, one line, not empty,
// at most maxRewrite bytes.
func (o *Orchestrator) rewrite(ctx context.Context, query string, history []events.Turn) (string, error) {
	var b strings.Builder
	b.WriteString("Earlier turns of the conversation, oldest first:\n")
	for _, t := range history {
		fmt.Fprintf(&b, "%d. asked: %s\n", t.N, clip(cmp.Or(t.ResolvedQuery, t.Query), 200))
		if a := sessions.FirstSentence(t.Answer); a != "" {
			fmt.Fprintf(&b, "   answered: %s\n", clip(a, 200))
		}
	}
	fmt.Fprintf(&b, "\nNew message: %s", query)
	answer, err := o.cfg.Rewriter.CompleteJSON(ctx, rewriteSystem, b.String())
	if err != nil {
		return "", err
	}
	var out struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(extractJSON(answer), &out); err != nil {
		return "", fmt.Errorf("the answer is not JSON with a query: %v: %q", err, clip(answer, 60))
	}
	q := strings.TrimSpace(out.Query)
	switch {
	case q == "":
		return "", errors.New("the answer has no query")
	case len(q) > maxRewrite || strings.ContainsAny(q, "\n\r"):
		return "", fmt.Errorf("the rewritten query is not one line of at most %d bytes", maxRewrite)
	}
	return q, nil
}

const rewriteSystem = "You rewrite the user's new message in a conversation about Go programming into a standalone " +
	"search query. If it refers to an earlier turn (a pronoun such as it or its, or a continuation such as " +
	`"and what about …"), carry over what it refers to, keeping identifiers such as sync.RWMutex exactly. ` +
	"If it already stands alone, return it unchanged. Answer with one JSON object and nothing else: " +
	`{"query": "…"}`

// name is a Completer's name when it tells it.
func completerName(c Completer) string {
	if n, ok := c.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "OpenAI-compatible endpoint"
}

// recordTurn appends the workflow's turn to its session once it ended
// (completed, failed or canceled), before the checkpoint that says so is
// stored: a crash in between redoes the ending, and the append, which is
// idempotent by workflow id. It marks the checkpoint recorded.
func (o *Orchestrator) recordTurn(ctx context.Context, cp *workflow.Checkpoint) error {
	st := cp.Session
	// A turn rolled back by a newer one (double_text rollback) is not kept.
	if st == nil || st.Dropped || !cp.Status.Terminal() || st.Recorded == cp.Status {
		return nil
	}
	t := events.Turn{WorkflowID: cp.WorkflowID, Query: cmp.Or(st.Conversation.OriginalQuery, cp.Query), Status: cp.Status}
	if st.Conversation.OriginalQuery != "" {
		t.ResolvedQuery = cp.Query
	}
	if cp.Status == events.StateCompleted {
		t.Answer, t.Citations = answerOf(cp.Result)
	}
	sess, err := o.sessions.Append(ctx, cp.TenantID, cp.User, st.ID, t)
	if err != nil {
		return fmt.Errorf("orchestrator: record the turn in session %s: %w", st.ID, err)
	}
	st.Recorded = cp.Status
	if sess.SummaryPending != nil {
		o.refineSummary(cp.TenantID, cp.User, st.ID)
	}
	return nil
}

// refineSummary has the configured summarizer (a model) write a
// session's owed rolling summary in the background: never inside a
// workflow's ending, whose lock the workflow's replies wait on. If this
// process stops first, the extractive summary stands until the
// session's next turn owes one again.
func (o *Orchestrator) refineSummary(tenant, user, session string) {
	o.background.Add(1)
	go func() {
		defer o.background.Done()
		if _, err := o.sessions.Refine(o.backgroundCtx, tenant, user, session); err != nil && o.backgroundCtx.Err() == nil {
			o.log.Warn("session summary not refined", "tenant", tenant, "session", session, "err", err)
		}
	}()
}

// answerOf takes the answer and its citations out of a workflow's result:
// the composer's {"answer", "citations"} (or the first sink's that has
// one, when the plan has several), else the result's text best-effort.
func answerOf(result json.RawMessage) (string, json.RawMessage) {
	var composed struct {
		Answer    string          `json:"answer"`
		Citations json.RawMessage `json:"citations"`
	}
	if json.Unmarshal(result, &composed) == nil && composed.Answer != "" {
		return composed.Answer, composed.Citations
	}
	var sinks map[string]json.RawMessage
	if json.Unmarshal(result, &sinks) == nil {
		for _, k := range slices.Sorted(maps.Keys(sinks)) {
			if json.Unmarshal(sinks[k], &composed) == nil && composed.Answer != "" {
				return composed.Answer, composed.Citations
			}
		}
		for _, field := range []string{"summary", "text", "report", "message", "result", "output"} {
			var s string
			if v, ok := sinks[field]; ok && json.Unmarshal(v, &s) == nil && s != "" {
				return s, nil
			}
		}
	}
	var s string
	if json.Unmarshal(result, &s) == nil {
		return s, nil
	}
	if len(result) == 0 || string(result) == "null" {
		return "", nil
	}
	return string(result), nil
}

// LLMSummarizer writes a session's rolling summary with a language model,
// in at most a few sentences; its answer must be JSON {"summary": "…"}.
// The sessions store falls back to the extractive summary when it fails.
// Safe for concurrent use if Chat is.
type LLMSummarizer struct {
	Chat Completer
}

var (
	_ sessions.Summarizer = LLMSummarizer{}
	_ Completer           = (*llm.Chat)(nil)
)

// Summarize implements sessions.Summarizer.
func (s LLMSummarizer) Summarize(ctx context.Context, previous string, turns []events.Turn) (string, string, error) {
	by := completerName(s.Chat)
	var b strings.Builder
	if previous != "" {
		fmt.Fprintf(&b, "Summary so far:\n%s\n\n", previous)
	}
	b.WriteString("New turns:\n")
	for _, t := range turns {
		fmt.Fprintf(&b, "%d. asked: %s\n   answered (%s): %s\n", t.N, clip(cmp.Or(t.ResolvedQuery, t.Query), 200), t.Status, clip(t.Answer, 600))
	}
	answer, err := s.Chat.CompleteJSON(ctx, summarySystem, b.String())
	if err != nil {
		return "", by, err
	}
	var out struct {
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal(extractJSON(answer), &out); err != nil || strings.TrimSpace(out.Summary) == "" {
		return "", by, fmt.Errorf("the answer is not JSON with a summary: %q", clip(answer, 60))
	}
	if len(out.Summary) > 2000 {
		return "", by, errors.New("the summary is longer than 2000 bytes")
	}
	return strings.TrimSpace(out.Summary), by, nil
}

const summarySystem = "You keep a rolling summary of a conversation about Go programming, for an assistant that " +
	"will answer the next questions. Merge the summary so far with the new turns into at most six short sentences: " +
	"what was asked, the identifiers involved and the key facts answered. Answer with one JSON object and nothing " +
	`else: {"summary": "…"}`
