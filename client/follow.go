package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentbus/agentbus/events"
)

// Frame is one event of a workflow as clients receive it: its offset in
// the events stream, type ("status", "progress", "artifact", "complete",
// "error", "cancelled", "reset" …), step and data.
type Frame = events.Frame

// ErrReset: the gateway could not replay the events after the cursor —
// they expired, or the events stream was recreated (its epoch changed).
// The events in between are gone; the reset frame carries the workflow's
// state instead, and following goes on after ResumeFrom.
var ErrReset = errors.New("client: event stream reset")

// ResetError is how Follow hands a reset to its caller, beside the reset
// frame: why, and the offset following resumes after.
type ResetError struct {
	// Reason is "retention" (the events after the cursor expired or
	// were deleted) or "epoch" (the stream was recreated).
	Reason     string
	ResumeFrom uint64
	// State is the workflow's checkpoint the reset frame carried: the
	// truth to go on from.
	State State
}

func (e *ResetError) Error() string {
	return fmt.Sprintf("client: event stream reset (%s): events before offset %d are gone; the state is the checkpoint's", e.Reason, e.ResumeFrom)
}

// Unwrap makes errors.Is(err, ErrReset) true.
func (e *ResetError) Unwrap() error { return ErrReset }

// Follow yields a workflow's frames after offset from (0: from the
// start), in order, each once, until the terminal one (complete, error
// or cancelled). When the connection drops it reconnects after the last
// offset it yielded, sending the events stream's epoch, so that nothing
// is lost or repeated. A reset is yielded with a *ResetError (errors.Is
// ErrReset): ranging on goes on after it. Any other error is yielded
// last: a 4xx other than a just-submitted workflow's 404 (retried for
// Config.NotFoundGrace), MaxRetries reconnects in a row without a frame,
// or ctx's end. Resuming at or past the terminal event yields a terminal
// frame made from the workflow's state.
func (c *Client) Follow(ctx context.Context, workflow string, from uint64) iter.Seq2[Frame, error] {
	if c.nc != nil {
		return c.nc.follow(ctx, workflow, from)
	}
	return func(yield func(Frame, error) bool) {
		var epoch string
		notFoundUntil := time.Now().Add(max(c.cfg.NotFoundGrace, 0))
		stopped := false
		emit := func(f Frame, err error) bool {
			if !yield(f, err) {
				stopped = true
				return false
			}
			return true
		}
		for fails := 0; ; {
			progressed := false
			done, err := c.followOnce(ctx, workflow, &from, &epoch, func(f Frame, ferr error) bool {
				progressed = true
				return emit(f, ferr)
			})
			if stopped || done {
				if err != nil && !stopped {
					yield(Frame{}, err)
				}
				return
			}
			if ctx.Err() != nil {
				yield(Frame{}, ctx.Err())
				return
			}
			if progressed {
				fails = 0
			}
			fails++
			switch {
			case errors.Is(err, ErrNotFound) && !time.Now().Before(notFoundUntil):
				yield(Frame{}, err)
				return
			case err != nil && !errors.Is(err, ErrNotFound) && fails > c.cfg.MaxRetries:
				yield(Frame{}, fmt.Errorf("client: following %s: %d reconnects in a row failed: %w", workflow, fails-1, err))
				return
			}
			select {
			case <-ctx.Done():
				yield(Frame{}, ctx.Err())
				return
			case <-time.After(min(time.Duration(fails)*100*time.Millisecond, 2*time.Second)):
			}
		}
	}
}

// followOnce reads one SSE connection; done reports that following is
// over (the terminal frame, the caller stopped, or an error retrying
// cannot fix). from moves with each frame's id — an event's offset, or a
// reset's resume point — and epoch is the stream's, sent back on a
// reconnect so that a recreated stream answers with a reset rather than
// with offsets that mean something else there.
func (c *Client) followOnce(ctx context.Context, workflow string, from *uint64, epoch *string, yield func(Frame, error) bool) (done bool, err error) {
	path := "/v1/workflows/" + url.PathEscape(workflow) + "/events?from=" + strconv.FormatUint(*from, 10)
	if *epoch != "" {
		path += "&epoch=" + url.QueryEscape(*epoch)
	}
	resp, err := c.Do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return ctx.Err() != nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNoContent:
		// Resumed at or past the terminal event: the state says how it ended.
		st, err := c.State(ctx, workflow)
		if err != nil {
			return true, err
		}
		yield(Frame{Offset: *from, WorkflowID: workflow, TenantID: c.cfg.Tenant, Type: terminalType(st.Status)}, nil)
		return true, nil
	case resp.StatusCode == http.StatusNotFound:
		return false, ReadError(resp)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return true, ReadError(resp)
	case resp.StatusCode != http.StatusOK:
		return false, ReadError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	var event, data, id string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event == "connected" && *epoch == "" {
				var c struct {
					Epoch string `json:"epoch"`
				}
				if json.Unmarshal([]byte(data), &c) == nil {
					*epoch = c.Epoch
				}
			}
			if event != "" && event != "connected" && data != "" {
				var f Frame
				if err := json.Unmarshal([]byte(data), &f); err != nil {
					return true, fmt.Errorf("client: bad frame from the gateway: %w", err)
				}
				n, idErr := strconv.ParseUint(id, 10, 64)
				if idErr == nil {
					*from = n
				}
				var ferr error
				if f.Type == "reset" {
					re := resetError(f)
					if idErr != nil {
						*from = re.ResumeFrom
					}
					ferr = re
				}
				if !yield(f, ferr) || f.Terminal() {
					return true, nil
				}
			}
			event, data, id = "", "", ""
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			data += line[len("data: "):]
		}
	}
	if err := sc.Err(); err != nil {
		return ctx.Err() != nil, err
	}
	return false, errors.New("client: event stream ended early")
}

// resetError reads a reset frame's data: the checkpoint, why, and where
// following resumes.
func resetError(f Frame) *ResetError {
	var r struct {
		Reason     string `json:"reason"`
		ResumeFrom uint64 `json:"resume_from"`
	}
	_ = json.Unmarshal(f.Data, &r)
	e := &ResetError{Reason: r.Reason, ResumeFrom: r.ResumeFrom}
	_ = json.Unmarshal(f.Data, &e.State)
	return e
}

// terminalType maps a final workflow state to its terminal frame type.
func terminalType(s events.State) string {
	switch s {
	case events.StateCompleted:
		return events.TypeComplete.Short()
	case events.StateCanceled:
		return events.TypeCancelled.Short()
	default:
		return events.TypeError.Short()
	}
}

// WorkflowError is a workflow that ended without a result: failed (Code
// and Message from its error event, e.g. "step_failed"), rejected, or
// canceled (Code "canceled").
type WorkflowError struct {
	WorkflowID string
	Code       string
	Message    string
	StepID     string
}

func (e *WorkflowError) Error() string {
	s := fmt.Sprintf("workflow %s ended %s: %s", e.WorkflowID, e.Code, e.Message)
	if e.StepID != "" {
		s += " (step " + e.StepID + ")"
	}
	return s
}

// Result is a completed workflow's result: the output of its sink steps
// (one sink's output as is, several keyed by step id), every step's
// output, and where the time went.
type Result = events.Complete

// Wait follows a workflow from its start until it ends and returns its
// result, or a *WorkflowError when it failed, was rejected or canceled.
// Resets on the way are passed over: only the end matters here.
func (c *Client) Wait(ctx context.Context, workflow string) (Result, error) {
	for f, err := range c.Follow(ctx, workflow, 0) {
		if errors.Is(err, ErrReset) {
			continue
		}
		if err != nil {
			return Result{}, err
		}
		switch f.Type {
		case events.TypeComplete.Short():
			var r Result
			if f.Data == nil { // resumed past the end: the state has it
				st, err := c.State(ctx, workflow)
				if err != nil {
					return Result{}, err
				}
				r.Result = st.Result
				return r, nil
			}
			if err := json.Unmarshal(f.Data, &r); err != nil {
				return Result{}, fmt.Errorf("client: reading the result of %s: %w", workflow, err)
			}
			return r, nil
		case events.TypeError.Short():
			var e events.Error
			_ = json.Unmarshal(f.Data, &e)
			return Result{}, &WorkflowError{WorkflowID: workflow, Code: e.Code, Message: e.Message, StepID: e.StepID}
		case events.TypeCancelled.Short():
			var cc events.Cancelled
			_ = json.Unmarshal(f.Data, &cc)
			return Result{}, &WorkflowError{WorkflowID: workflow, Code: "canceled", Message: cc.Reason}
		}
	}
	return Result{}, fmt.Errorf("client: the events of %s ended without a terminal event", workflow)
}
