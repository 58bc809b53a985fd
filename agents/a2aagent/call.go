package a2aagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/agentbus/agentbus/agents"
)

// call is one step run as a task of the remote agent: it follows the
// task's events (streamed, or polled), publishes them as the step's
// progress and artifacts, and keeps what the output is made of. Used by
// one goroutine.
type call struct {
	r         *Remote
	s         *skill
	client    *a2aclient.Client
	emit      agents.Emitter
	req       agents.Request
	streaming bool

	taskID    a2a.TaskID
	contextID string
	status    a2a.TaskStatus
	percent   float64
	said      string          // the last progress message published
	artifacts []*a2a.Artifact // as streamed, merged by id
	task      *a2a.Task       // the last whole task seen (tasks/get)
	reply     *a2a.Message    // the agent answered with a message, not a task
}

// run sends the step's message and follows the task until it settles;
// when ctx ends first, it cancels the remote task.
func (c *call) run(ctx context.Context) (json.RawMessage, error) {
	params := &a2a.MessageSendParams{Message: c.message()}
	var err error
	if c.streaming {
		err = c.stream(ctx, params)
	} else {
		err = c.send(ctx, params)
	}
	if c.reply == nil && !settled(c.status.State) && c.taskID != "" && ctx.Err() == nil {
		// Not streamed, or the stream broke before the end: ask.
		if err != nil {
			c.r.log.Info("stream of a remote task broke; polling it", "task", c.taskID, "err", err)
		}
		err = c.poll(ctx)
	}
	if ctx.Err() != nil {
		c.cancelRemote(ctx)
		return nil, fmt.Errorf("a2aagent: %s: %w", c.s.capability, context.Cause(ctx))
	}
	if err != nil {
		return nil, fmt.Errorf("a2aagent: %s (agent %q): %w", c.s.capability, c.s.agentName, err)
	}
	return c.output()
}

// send starts the task with message/send, not waiting for it to finish
// (the client polls), so that its id is known while it runs.
func (c *call) send(ctx context.Context, params *a2a.MessageSendParams) error {
	// The answer names the task, which a cancel needs: a step that ends
	// while message/send is in flight gives it CancelTimeout more to
	// answer, rather than abandoning a task it started and cannot name.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(c.r.cfg.CancelTimeout, cancel) })
	defer stop()
	res, err := c.client.SendMessage(sctx, params)
	if err != nil {
		return fmt.Errorf("message/send: %w", err)
	}
	switch v := res.(type) {
	case *a2a.Message:
		c.reply = v
	case *a2a.Task:
		c.apply(ctx, v)
	}
	return nil
}

// stream starts the task with message/stream and applies its events
// until the stream ends.
//
// The stream's first event names the task, which a cancel needs: a step
// that ends before it arrived keeps the stream CancelTimeout more for it,
// rather than abandoning a task it started and cannot name; once the task
// is named the stream ends with the step.
func (c *call) stream(ctx context.Context, params *a2a.MessageSendParams) error {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var named atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		if named.Load() {
			cancel()
			return
		}
		time.AfterFunc(c.r.cfg.CancelTimeout, cancel)
	})
	defer stop()
	for ev, err := range c.client.SendStreamingMessage(sctx, params) {
		if err != nil {
			if ctx.Err() != nil {
				return nil // the step ended: run cancels the task, if named
			}
			return fmt.Errorf("message/stream: %w", err)
		}
		c.apply(ctx, ev)
		if c.reply != nil || settled(c.status.State) {
			return nil
		}
		if c.taskID != "" {
			named.Store(true)
			if ctx.Err() != nil {
				return nil
			}
		}
	}
	return nil
}

// poll asks for the task with tasks/get, backing off, until it settles.
func (c *call) poll(ctx context.Context) error {
	wait := c.r.cfg.PollInterval
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		task, err := c.client.GetTask(ctx, &a2a.TaskQueryParams{ID: c.taskID})
		if err != nil {
			return fmt.Errorf("tasks/get %s: %w", c.taskID, err)
		}
		c.apply(ctx, task)
		if settled(c.status.State) {
			return nil
		}
		wait = min(2*wait, c.r.cfg.PollMax)
		t.Reset(wait)
	}
}

// cancelRemote sends tasks/cancel for the task, bounded by CancelTimeout
// and outliving ctx, which has ended.
func (c *call) cancelRemote(ctx context.Context) {
	if c.taskID == "" || settled(c.status.State) {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.r.cfg.CancelTimeout)
	defer cancel()
	_, err := c.client.CancelTask(cctx, &a2a.TaskIDParams{ID: c.taskID})
	if err != nil && !errors.Is(err, a2a.ErrTaskNotCancelable) {
		c.r.log.Warn("tasks/cancel of a remote task failed", "task", c.taskID, "workflow", c.req.WorkflowID, "step", c.req.StepID, "err", err)
		return
	}
	c.r.log.Info("remote task canceled", "task", c.taskID, "workflow", c.req.WorkflowID, "step", c.req.StepID, "cause", context.Cause(ctx))
}

// apply takes in one event of the task.
func (c *call) apply(ctx context.Context, ev a2a.Event) {
	switch v := ev.(type) {
	case *a2a.Message:
		c.reply = v
	case *a2a.Task:
		c.taskID, c.contextID, c.task = v.ID, v.ContextID, v
		c.setStatus(ctx, v.Status, v.Metadata)
	case *a2a.TaskStatusUpdateEvent:
		c.taskID, c.contextID = v.TaskID, v.ContextID
		c.setStatus(ctx, v.Status, v.Metadata)
	case *a2a.TaskArtifactUpdateEvent:
		c.taskID, c.contextID = v.TaskID, v.ContextID
		c.addArtifact(ctx, v)
	}
}

// setStatus records the task's status and publishes it as progress: the
// percent from the event's "percent" metadata (what agentbus's own A2A
// door sends) or the last one known, 100 once completed.
func (c *call) setStatus(ctx context.Context, st a2a.TaskStatus, meta map[string]any) {
	c.status = st
	if p, ok := meta["percent"].(float64); ok {
		c.percent = min(max(p, c.percent), 100)
	}
	if st.State == a2a.TaskStateCompleted {
		c.percent = 100
	}
	msg := "remote task " + string(st.State)
	if text := textOf(messageParts(st.Message)); text != "" {
		msg += ": " + text
	}
	if msg == c.said {
		return
	}
	c.said = msg
	if err := c.emit.Progress(ctx, c.percent, msg); err != nil && ctx.Err() == nil {
		c.r.log.Warn("progress event not published", "step", c.req.StepID, "err", err)
	}
}

// addArtifact merges a streamed artifact chunk and publishes it.
func (c *call) addArtifact(ctx context.Context, ev *a2a.TaskArtifactUpdateEvent) {
	a := ev.Artifact
	if a == nil {
		return
	}
	merged := false
	for i, have := range c.artifacts {
		if have.ID != a.ID {
			continue
		}
		if ev.Append {
			cp := *have
			cp.Parts = append(append(a2a.ContentParts{}, have.Parts...), a.Parts...)
			c.artifacts[i] = &cp
		} else {
			c.artifacts[i] = a
		}
		merged = true
	}
	if !merged {
		c.artifacts = append(c.artifacts, a)
	}
	name := a.Name
	if name == "" {
		name = c.s.skill.ID
	}
	if err := c.emit.Artifact(ctx, string(a.ID), name, partsData(a.Parts), ev.Append, ev.LastChunk); err != nil && ctx.Err() == nil {
		c.r.log.Warn("artifact event not published", "step", c.req.StepID, "err", err)
	}
}

// settled reports whether a task in state st will not move without the
// caller: terminal, or waiting for input agentbus cannot give.
func settled(st a2a.TaskState) bool {
	return st.Terminal() || st == a2a.TaskStateInputRequired || st == a2a.TaskStateAuthRequired
}
