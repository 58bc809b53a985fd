package a2a

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// followUp applies a message sent to an existing task: the answer to an
// input-required task is the human decision on the step(s) awaiting one —
// text parts are the comment, a data part {"approve": false} rejects,
// {"step_id": …} picks one step. It returns the offset the task's events
// continue after.
func (g *Server) followUp(ctx context.Context, tenant string, sr sendRequest) (uint64, *rpcError) {
	const at = "/params/message/taskId"
	last, err := g.bus.LastOffset(ctx, tenant, sr.taskID)
	if err != nil && subjects.ValidWorkflow(sr.taskID) == nil {
		return 0, rpcErr(rpcInternalError, "", "reading the task's events: %v", err)
	}
	cp, rerr := g.loadTask(ctx, tenant, sr.taskID)
	if rerr != nil {
		rerr.Pointer = at
		return 0, rerr
	}
	if stored := cp.Metadata[metaContextID]; sr.contextID != "" && stored != "" && stored != sr.contextID {
		return 0, rpcErr(rpcInvalidParams, "/params/message/contextId", "task %q belongs to context %q", sr.taskID, stored)
	}
	if cp.Status != events.StateInputRequired {
		return 0, rpcErr(rpcInvalidParams, at, "task %q is %s: only a task that awaits input (input-required) takes a follow-up message", sr.taskID, cp.Status)
	}
	c, rerr := decodeDecision(sr.parts, "/params/message/parts")
	if rerr != nil {
		return 0, rerr
	}
	res, rerr := g.controlTask(ctx, tenant, sr.taskID, c)
	if rerr != nil {
		return 0, rerr
	}
	if !res.Applied {
		return 0, rpcErr(rpcInvalidParams, at, "%s", res.Message)
	}
	return last, nil
}

// decodeDecision reads an approval decision from a follow-up message.
func decodeDecision(raw json.RawMessage, at string) (events.Control, *rpcError) {
	c := events.Control{Action: events.ActionApprove}
	var parts []rawPart
	if rerr := decodeParams(raw, at, &parts); rerr != nil {
		return c, rerr
	}
	var texts []string
	for i, p := range parts {
		pat := at + "/" + strconv.Itoa(i)
		switch {
		case p.Text != nil:
			texts = append(texts, *p.Text)
		case p.Data != nil:
			var d struct {
				Approve *bool  `json:"approve"`
				StepID  string `json:"step_id"`
				Comment string `json:"comment"`
			}
			if rerr := decodeParams(p.Data, pat+"/data", &d); rerr != nil {
				return c, rerr
			}
			if d.Approve != nil && !*d.Approve {
				c.Action = events.ActionReject
			}
			c.StepID = d.StepID
			if d.Comment != "" {
				texts = append(texts, d.Comment)
			}
		default:
			return c, rpcErr(rpcInvalidParams, pat, "want a text part (a comment) or a data part {\"approve\": true|false}")
		}
	}
	c.Reason = strings.Join(texts, "\n")
	return c, nil
}

// controlTask sends a control action to the orchestrators through the
// workflow's control subject, as POST …/cancel and …/approve do.
func (g *Server) controlTask(ctx context.Context, tenant, id string, c events.Control) (events.ControlResult, *rpcError) {
	var res events.ControlResult
	subj, err := subjects.Control(tenant, id)
	if err != nil {
		return res, errTaskNotFound(id)
	}
	env, err := events.New(events.TypeControl, newWorkflowID(), events.SourceGateway, tenant, id, c.StepID, c)
	if err != nil {
		return res, rpcErr(rpcInvalidParams, "/params", "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := g.bus.Request(ctx, subj, env)
	if err != nil {
		return res, rpcErr(rpcInternalError, "", "no orchestrator answered: %v", err)
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(out, &e) == nil && e.Error != "" {
		if strings.Contains(e.Error, "no such workflow") {
			return res, errTaskNotFound(id)
		}
		return res, rpcErr(rpcInternalError, "", "%s", e.Error)
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, rpcErr(rpcInternalError, "", "bad answer from the orchestrator")
	}
	return res, nil
}
