package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentbus/agentbus/events"
)

// formatFrame renders one event for people: offset, type, step and the gist.
func formatFrame(f events.Frame) string {
	head := fmt.Sprintf("[%4d] %-9s %-10s", f.Offset, f.Type, f.StepID)
	var gist string
	switch f.Type {
	case "status":
		var s events.Status
		_ = json.Unmarshal(f.Data, &s)
		gist = string(s.State)
		if s.Message != "" {
			gist += ": " + s.Message
		}
		if s.TraceID != "" {
			gist += " (trace " + s.TraceID + ")"
		}
	case "progress":
		var p events.Progress
		_ = json.Unmarshal(f.Data, &p)
		gist = fmt.Sprintf("%3.0f%% %s", p.Percent, p.Message)
	case "error":
		var e events.Error
		_ = json.Unmarshal(f.Data, &e)
		gist = e.Code + ": " + e.Message
		if e.Pointer != "" {
			gist += " (at " + e.Pointer + ")"
		}
	case "reset":
		var r struct {
			Reason     string       `json:"reason"`
			ResumeFrom uint64       `json:"resume_from"`
			Status     events.State `json:"status"`
		}
		_ = json.Unmarshal(f.Data, &r)
		why := "events after your offset may have expired"
		if r.Reason == "epoch" {
			why = "the event stream was recreated"
		}
		gist = fmt.Sprintf("%s; workflow is %s; continuing after offset %d", why, r.Status, r.ResumeFrom)
	case "complete":
		var c events.Complete
		_ = json.Unmarshal(f.Data, &c)
		gist = fmt.Sprintf("in %.1f ms\n%s", c.DurationMS, indent(c.Result))
	default:
		gist = string(f.Data)
	}
	return strings.TrimRight(head+"  "+gist, " ")
}

func indent(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "       ", "  ")
	return "       " + string(b)
}
