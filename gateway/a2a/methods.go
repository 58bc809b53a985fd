package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// sendRequest is a checked message/send or message/stream request.
type sendRequest struct {
	messageID, contextID, taskID string
	blocking                     bool
	historyLength                *int
	parts                        json.RawMessage
}

// decodeSend checks MessageSendParams.
func decodeSend(params json.RawMessage) (sendRequest, *rpcError) {
	var p struct {
		Message json.RawMessage `json:"message"`
		Config  *struct {
			Blocking            *bool           `json:"blocking"`
			HistoryLength       *int            `json:"historyLength"`
			AcceptedOutputModes []string        `json:"acceptedOutputModes"`
			Push                json.RawMessage `json:"pushNotificationConfig"`
		} `json:"configuration"`
	}
	var m struct {
		Kind      string          `json:"kind"`
		MessageID *string         `json:"messageId"`
		Role      string          `json:"role"`
		Parts     json.RawMessage `json:"parts"`
		TaskID    string          `json:"taskId"`
		ContextID string          `json:"contextId"`
	}
	sr := sendRequest{blocking: true}
	if rerr := decodeParams(params, "/params", &p); rerr != nil {
		return sr, rerr
	}
	if len(p.Message) == 0 || p.Message[0] != '{' {
		return sr, rpcErr(rpcInvalidParams, "/params/message", "required: a message object")
	}
	if rerr := decodeParams(p.Message, "/params/message", &m); rerr != nil {
		return sr, rerr
	}
	switch {
	case m.Kind != "" && m.Kind != "message":
		return sr, rpcErr(rpcInvalidParams, "/params/message/kind", `want "message"`)
	case m.Role != string(a2a.MessageRoleUser):
		return sr, rpcErr(rpcInvalidParams, "/params/message/role", `want "user"`)
	case m.MessageID == nil || *m.MessageID == "":
		return sr, rpcErr(rpcInvalidParams, "/params/message/messageId", "required")
	case len(*m.MessageID) > maxA2AID:
		return sr, rpcErr(rpcInvalidParams, "/params/message/messageId", "longer than %d bytes", maxA2AID)
	case len(m.ContextID) > maxA2AID:
		return sr, rpcErr(rpcInvalidParams, "/params/message/contextId", "longer than %d bytes", maxA2AID)
	case m.Parts == nil:
		return sr, rpcErr(rpcInvalidParams, "/params/message/parts", "required")
	}
	sr.messageID, sr.contextID, sr.taskID, sr.parts = *m.MessageID, m.ContextID, m.TaskID, m.Parts
	if c := p.Config; c != nil {
		if c.Blocking != nil {
			sr.blocking = *c.Blocking
		}
		if c.HistoryLength != nil && *c.HistoryLength < 0 {
			return sr, rpcErr(rpcInvalidParams, "/params/configuration/historyLength", "want a non-negative integer")
		}
		sr.historyLength = c.HistoryLength
		if len(c.Push) > 0 && string(c.Push) != "null" {
			return sr, rpcErr(rpcPushNotSupported, "/params/configuration/pushNotificationConfig",
				"agentbus streams updates (message/stream, tasks/resubscribe) instead of pushing them")
		}
		if len(c.AcceptedOutputModes) > 0 && !slices.ContainsFunc(c.AcceptedOutputModes, func(m string) bool {
			return strings.HasPrefix(m, "application/json") || strings.HasPrefix(m, "text/") || m == "*/*" || m == "application/*"
		}) {
			return sr, rpcErr(rpcUnsupportedContentType, "/params/configuration/acceptedOutputModes",
				"agentbus answers in application/json and text/plain")
		}
	}
	return sr, nil
}

// decodeTaskID checks TaskIDParams / TaskQueryParams.
func decodeTaskID(params json.RawMessage) (string, *int, *rpcError) {
	var p struct {
		ID            *string `json:"id"`
		HistoryLength *int    `json:"historyLength"`
	}
	if rerr := decodeParams(params, "/params", &p); rerr != nil {
		return "", nil, rerr
	}
	if p.ID == nil || *p.ID == "" {
		return "", nil, rpcErr(rpcInvalidParams, "/params/id", "required: the task id")
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return "", nil, rpcErr(rpcInvalidParams, "/params/historyLength", "want a non-negative integer")
	}
	return *p.ID, p.HistoryLength, nil
}

// userMessage is the message that started a task, as the gateway read it.
func (in partsInput) userMessage(id, task, contextID string) *a2a.Message {
	msg := &a2a.Message{ID: id, Role: a2a.MessageRoleUser, TaskID: a2a.TaskID(task), ContextID: contextID}
	if in.Query != "" {
		msg.Parts = append(msg.Parts, a2a.TextPart{Text: in.Query})
	}
	if in.Plan != nil {
		var plan any
		_ = json.Unmarshal(in.Plan, &plan)
		msg.Parts = append(msg.Parts, a2a.DataPart{Data: map[string]any{"plan": plan}})
	}
	return msg
}

// submittedTask is a task that was just submitted.
func submittedTask(id, contextID string, first *a2a.Message) *a2a.Task {
	now := time.Now().UTC()
	t := &a2a.Task{ID: a2a.TaskID(id), ContextID: contextID, Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: &now}}
	if len(first.Parts) > 0 {
		t.History = []*a2a.Message{first}
	}
	return t
}

// startTask starts a workflow for a new task and returns the task as
// submitted. workflow empty means a fresh id; idAt points at where a
// client-chosen id came from. With an idempotency key in ctx (withKey)
// the task of an earlier message/send with the same key and message is
// the answer, and no new one starts.
func (g *Server) startTask(ctx context.Context, tenant, workflow, idAt string, in partsInput, messageID, contextID string) (*a2a.Task, *rpcError) {
	requested := workflow
	if workflow == "" {
		workflow = newWorkflowID() // to check the request with; Submit picks the id
	} else if g.taskExists(ctx, tenant, workflow) {
		return nil, rpcErr(rpcInvalidParams, idAt, "task %q already exists", workflow)
	}
	meta := map[string]string{metaInterface: "a2a", metaMessageID: messageID}
	if contextID != "" {
		meta[metaContextID] = contextID
	}
	sub, rerr := in.submission(workflow, meta, idAt)
	if rerr != nil {
		return nil, rerr
	}
	if rerr := g.checkFiles(in.Files); rerr != nil {
		return nil, rerr
	}
	// A context id that is a subject token (a UUID is) makes the task a
	// turn of that session; any other stays a label, as before.
	if subjects.ValidSession(contextID) == nil {
		sub.SessionID = contextID
	}
	sub.User = g.gw.User(ctx)
	if len(in.History) > 0 && sub.SessionID != "" {
		if _, err := g.gw.SeedSession(ctx, tenant, sub.SessionID, in.History); err != nil {
			g.log.Error("a2a seed session", "tenant", tenant, "session", sub.SessionID, "err", err)
			return nil, rpcErr(rpcInternalError, "", "could not store the conversation: %v", err)
		}
	}
	if len(in.Files) > 0 {
		up, rerr := g.uploadFiles(ctx, tenant, in.Files, messageID)
		if rerr != nil {
			return nil, rerr
		}
		sub.Metadata[metaUpload] = up
	}
	resp, err := g.gw.Submit(ctx, tenant, keyOf(ctx), requested, sub)
	if err != nil {
		return nil, g.submitError(err, tenant, requested, idAt)
	}
	workflow = resp.WorkflowID
	// Wait, like POST /v1/workflows, until an orchestrator recorded the
	// task, so that tasks/get and tasks/resubscribe find it; past
	// AcceptTimeout it is still submitted, durably, and runs later.
	key, _ := subjects.CheckpointKey(tenant, workflow)
	wctx, cancel := context.WithTimeout(ctx, g.acceptTimeout)
	defer cancel()
	_, _ = g.checkpoints.Wait(wctx, key)
	if contextID == "" {
		contextID = workflow
	}
	return submittedTask(workflow, contextID, in.userMessage(messageID, workflow, contextID)), nil
}

// checkFiles refuses file parts whose bytes, together, pass the gateway's
// upload bound, naming the part that passes it.
func (g *Server) checkFiles(files []filePart) *rpcError {
	var total int64
	for _, f := range files {
		total += int64(len(f.Bytes))
		if g.maxUploadBytes > 0 && total > g.maxUploadBytes {
			return rpcErr(rpcInvalidParams, f.At+"/file/bytes",
				"file %q is too large: the message's files come to %d bytes or more, over the gateway's upload bound of %d bytes (--max-upload-bytes)",
				f.Name, total, g.maxUploadBytes)
		}
	}
	return nil
}

// uploadFiles indexes a message's files in the tenant's index before its
// task starts: it starts their ingest workflow and waits, up to
// Config.BlockTimeout, for it to end, so that the task's search sees
// them. It returns the ingest workflow's id.
func (g *Server) uploadFiles(ctx context.Context, tenant string, files []filePart, messageID string) (string, *rpcError) {
	in := make([]File, len(files))
	for i, f := range files {
		in[i] = File{Name: f.Name, Data: f.Bytes}
	}
	up, err := g.gw.Upload(ctx, tenant, in, map[string]any{metaMessageID: messageID})
	var fe *FileError
	var quota *api.QuotaError
	switch {
	case errors.As(err, &fe) && fe.Index < len(files):
		return "", rpcErr(rpcInvalidParams, files[fe.Index].At+"/file/name", "%s", fe.Reason)
	case errors.As(err, &quota):
		q := quota.Quota
		return "", &rpcError{Code: rpcQuotaExceeded, Detail: quota.Reason(), Quota: &q, RetryAfter: quota.RetryAfter}
	case err != nil:
		g.log.Error("a2a upload", "tenant", tenant, "err", err)
		return "", rpcErr(rpcInternalError, "", "could not store the files: %v", err)
	}
	g.awaitSettled(ctx, tenant, up, 0)
	return up, nil
}

// submitError is the JSON-RPC error of a submission the gateway refused
// or could not store.
func (g *Server) submitError(err error, tenant, workflow, idAt string) *rpcError {
	var (
		reused *api.KeyReusedError
		quota  *api.QuotaError
	)
	switch {
	case errors.Is(err, api.ErrWorkflowExists):
		return rpcErr(rpcInvalidParams, idAt, "task %q already exists", workflow)
	case errors.As(err, &reused):
		return rpcErr(rpcInvalidRequest, "", "header %s: %q was sent with another message within the last 24 hours, which started task %s: send that same message again to get its task, or use a new key",
			api.IdempotencyHeader, reused.Key, reused.Workflow)
	case errors.As(err, &quota):
		q := quota.Quota
		return &rpcError{Code: rpcQuotaExceeded, Detail: quota.Reason(), Quota: &q, RetryAfter: quota.RetryAfter}
	}
	g.log.Error("a2a submit", "tenant", tenant, "err", err)
	return rpcErr(rpcInternalError, "", "could not store the submission: %v", err)
}

// rpcSend answers message/send: a new task (or the decision on an
// input-required one); blocking, the default, waits until the task ends or
// needs input, for at most Config.BlockTimeout.
func (g *Server) rpcSend(ctx context.Context, tenant string, params json.RawMessage) (*a2a.Task, *rpcError) {
	sr, rerr := decodeSend(params)
	if rerr != nil {
		return nil, rerr
	}
	var after uint64
	var task *a2a.Task
	if sr.taskID != "" {
		if after, rerr = g.followUp(ctx, tenant, sr); rerr != nil {
			return nil, rerr
		}
	} else {
		in, rerr := decodeParts(sr.parts, "/params/message/parts")
		if rerr != nil {
			return nil, rerr
		}
		if task, rerr = g.startTask(ctx, tenant, "", "/params/message/taskId", in, sr.messageID, sr.contextID); rerr != nil {
			return nil, rerr
		}
		sr.taskID = string(task.ID)
	}
	if sr.blocking {
		g.awaitSettled(ctx, tenant, sr.taskID, after)
	}
	cp, rerr := g.loadTask(ctx, tenant, sr.taskID)
	if rerr != nil && task != nil && rerr.Code == rpcTaskNotFound {
		return task, nil // submitted, not yet recorded by an orchestrator
	}
	if rerr != nil {
		return nil, rerr
	}
	t := cp.task(sr.historyLength)
	if sr.contextID != "" {
		t.ContextID = sr.contextID
	}
	return t, nil
}

// awaitSettled waits until the task's events after offset after say it
// ended or needs input, or Config.BlockTimeout passed.
func (g *Server) awaitSettled(ctx context.Context, tenant, id string, after uint64) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.BlockTimeout)
	defer cancel()
	m := newTaskEvents(id, id, a2a.TaskStateSubmitted)
	_ = g.follow(ctx, tenant, id, after, nil, func(rec bus.Record) bool {
		_, final := m.next(rec.Offset, rec.Envelope)
		return final || m.state == a2a.TaskStateInputRequired
	})
}

// rpcGet answers tasks/get from the workflow's checkpoint.
func (g *Server) rpcGet(ctx context.Context, tenant string, params json.RawMessage) (*a2a.Task, *rpcError) {
	id, hist, rerr := decodeTaskID(params)
	if rerr != nil {
		return nil, rerr
	}
	cp, rerr := g.loadTask(ctx, tenant, id)
	if rerr != nil {
		return nil, rerr
	}
	return cp.task(hist), nil
}

// rpcCancel answers tasks/cancel: a cancel on the control subject, then
// the task as the orchestrator left it. Canceling a canceled task answers
// the task; any other finished task is not cancelable.
func (g *Server) rpcCancel(ctx context.Context, tenant string, params json.RawMessage) (*a2a.Task, *rpcError) {
	id, _, rerr := decodeTaskID(params)
	if rerr != nil {
		return nil, rerr
	}
	cp, rerr := g.loadTask(ctx, tenant, id)
	if rerr != nil {
		return nil, rerr
	}
	if !cp.Status.Terminal() {
		res, rerr := g.controlTask(ctx, tenant, id, events.Control{Action: events.ActionCancel, Reason: "canceled through A2A tasks/cancel"})
		if rerr != nil {
			return nil, rerr
		}
		if cp, rerr = g.loadTask(ctx, tenant, id); rerr != nil {
			return nil, rerr
		}
		if !res.Applied && cp.Status != events.StateCanceled {
			return nil, rpcErr(rpcTaskNotCancelable, "/params/id", "task %q: %s", id, res.Message)
		}
	}
	if cp.Status != events.StateCanceled {
		return nil, rpcErr(rpcTaskNotCancelable, "/params/id", "task %q is already %s", id, cp.Status)
	}
	return cp.task(nil), nil
}
