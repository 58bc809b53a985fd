package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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
		if s.TotalSteps > 0 {
			gist += fmt.Sprintf(" [%d/%d steps]", s.CompletedSteps, s.TotalSteps)
		}
		if s.Artifact != nil { // a completed step's output: its id and size (the complete event prints it)
			gist += fmt.Sprintf(" → %s (%d bytes)", s.Artifact.ArtifactID, len(s.Artifact.Data))
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
	case "artifact":
		var a events.Artifact
		if json.Unmarshal(f.Data, &a) != nil {
			gist = string(f.Data)
			break
		}
		gist = artifactGist(a)
	case "custom":
		gist = customGist(f.Data)
	case "complete":
		var c events.Complete
		_ = json.Unmarshal(f.Data, &c)
		partial := ""
		if c.Partial {
			partial = ", with partial results: optional steps failed"
		}
		gist = fmt.Sprintf("in %.1f ms%s\n%s", c.DurationMS, partial, indent(c.Result))
	default:
		gist = string(f.Data)
	}
	return strings.TrimRight(head+"  "+gist, " ")
}

// artifactGist is an artifact event on one line: a text chunk as is
// (quoted, so that its line breaks stay on the line), other data as its
// size and opening.
func artifactGist(a events.Artifact) string {
	var text string
	if json.Unmarshal(a.Data, &text) == nil {
		return fmt.Sprintf("%s %q", a.ArtifactID, text)
	}
	preview := string(a.Data)
	if r := []rune(preview); len(r) > 100 {
		preview = string(r[:100]) + "…"
	}
	return fmt.Sprintf("%s (%d bytes) %s", a.ArtifactID, len(a.Data), preview)
}

func indent(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "       ", "  ")
	return "       " + string(b)
}

// customGist is an application's custom event on one line: its payload
// (as text when it is text, else its size) and its metadata.
func customGist(data json.RawMessage) string {
	var c events.Custom
	if json.Unmarshal(data, &c) != nil {
		return string(data)
	}
	b := c.Bytes()
	preview := fmt.Sprintf("(%d bytes)", len(b))
	if utf8.Valid(b) {
		preview = string(b)
		if r := []rune(preview); len(r) > 100 {
			preview = string(r[:100]) + "…"
		}
		preview = strconv.Quote(preview)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Metadata)) {
		preview += " " + k + "=" + c.Metadata[k]
	}
	return preview
}
