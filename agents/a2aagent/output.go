package a2aagent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentbus/agentbus/agents"
)

// Output is a step's output: the remote task as it ended.
type Output struct {
	// Agent and Skill name what ran: the remote agent's card name and the
	// skill's id.
	Agent string `json:"agent"`
	Skill string `json:"skill"`
	// TaskID and ContextID are the remote task's ids (empty when the agent
	// answered with a message and made no task).
	TaskID    string `json:"task_id,omitempty"`
	ContextID string `json:"context_id,omitempty"`
	// State is the task's final state ("completed"), or "message".
	State string `json:"state"`
	// Text joins the text parts of the artifacts, or of the message when
	// there is none, for steps that read text.
	Text string `json:"text,omitempty"`
	// Artifacts are the task's artifacts as A2A shapes them.
	Artifacts []*a2a.Artifact `json:"artifacts,omitempty"`
	// Message is the agent's answer when it gave a message rather than a
	// task, or the task's final status message.
	Message *a2a.Message `json:"message,omitempty"`
}

// metaSkill is the message metadata key naming the skill asked for.
const metaSkill = "skill_id"

// message is the A2A message a step becomes: a text part (the input when
// it is a string or has a string "query" or "text", else the workflow's
// query) and, when there is more, a data part holding the structured input
// and the dependencies' outputs. Its metadata names the skill and the
// step.
func (c *call) message() *a2a.Message {
	req := c.req
	var in any
	_ = json.Unmarshal(req.Input, &in)
	text := req.Query
	switch v := in.(type) {
	case string:
		text, in = v, nil
	case map[string]any:
		for _, k := range []string{"query", "text"} {
			if s, ok := v[k].(string); ok && s != "" {
				text = s
				break
			}
		}
	}
	parts := a2a.ContentParts{a2a.TextPart{Text: text}}
	data := map[string]any{}
	if in != nil {
		data["input"] = in
	}
	if len(req.DependencyOutputs) > 0 {
		deps := map[string]any{}
		for k, raw := range req.DependencyOutputs {
			var v any
			if json.Unmarshal(raw, &v) == nil {
				deps[k] = v
			}
		}
		data["dependency_outputs"] = deps
	}
	if len(data) > 0 {
		parts = append(parts, a2a.DataPart{Data: data})
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	m.Metadata = map[string]any{metaSkill: c.s.skill.ID, "agentbus": stepMeta(req)}
	return m
}

func stepMeta(req agents.Request) map[string]any {
	return map[string]any{"tenant_id": req.TenantID, "workflow_id": req.WorkflowID, "step_id": req.StepID, "attempt": req.Attempt}
}

// output makes the step's output of how the task ended; a task that
// failed, was rejected or canceled, or wants input is an error.
func (c *call) output() (json.RawMessage, error) {
	out := Output{Agent: c.s.agentName, Skill: c.s.skill.ID, TaskID: string(c.taskID), ContextID: c.contextID, State: string(c.status.State)}
	if c.reply != nil {
		out.State, out.Message, out.Text = "message", c.reply, textOf(c.reply.Parts)
		out.ContextID = c.reply.ContextID
		return marshal(out)
	}
	out.Artifacts = c.artifacts
	if c.task != nil && len(c.task.Artifacts) > 0 {
		out.Artifacts = c.task.Artifacts
	}
	out.Message = c.status.Message
	var texts []string
	for _, a := range out.Artifacts {
		if t := textOf(a.Parts); t != "" {
			texts = append(texts, t)
		}
	}
	out.Text = strings.Join(texts, "\n")
	if out.Text == "" {
		out.Text = textOf(messageParts(out.Message))
	}
	why := out.Text
	if m := textOf(messageParts(c.status.Message)); m != "" {
		why = m
	}
	switch st := c.status.State; st {
	case a2a.TaskStateCompleted:
		return marshal(out)
	case a2a.TaskStateRejected, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		return nil, fmt.Errorf("%w: a2aagent: remote task %s is %s: %s", agents.ErrPermanent, c.taskID, st, why)
	default:
		return nil, fmt.Errorf("a2aagent: remote task %s ended %s: %s", c.taskID, st, why)
	}
}

func marshal(out Output) (json.RawMessage, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("a2aagent: output: %w", err)
	}
	return b, nil
}

func messageParts(m *a2a.Message) a2a.ContentParts {
	if m == nil {
		return nil
	}
	return m.Parts
}

// textOf joins the text parts of ps.
func textOf(ps a2a.ContentParts) string {
	var texts []string
	for _, p := range ps {
		switch v := p.(type) {
		case a2a.TextPart:
			texts = append(texts, v.Text)
		case *a2a.TextPart:
			texts = append(texts, v.Text)
		}
	}
	return strings.Join(texts, "")
}

// partsData is what an artifact event carries of ps: the text of a text
// chunk, the data of a data part, else the parts as A2A shapes them.
func partsData(ps a2a.ContentParts) any {
	if len(ps) == 1 {
		switch v := ps[0].(type) {
		case a2a.TextPart:
			return v.Text
		case *a2a.TextPart:
			return v.Text
		case a2a.DataPart:
			return v.Data
		case *a2a.DataPart:
			return v.Data
		}
	}
	return ps
}
