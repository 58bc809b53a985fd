package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/events"
)

// A text chunk prints as its quoted text; a step's output artifact as its
// size and opening, never its whole data on one line.
func TestFormatFrameArtifacts(t *testing.T) {
	frame := func(a events.Artifact) events.Frame {
		b, _ := json.Marshal(a)
		return events.Frame{Offset: 7, Type: "artifact", StepID: "s", Data: b}
	}
	got := formatFrame(frame(events.Artifact{ArtifactID: "answer", Data: json.RawMessage(`"Mutexes lock.\n"`), Append: true}))
	if !strings.HasSuffix(got, `answer "Mutexes lock.\n"`) {
		t.Fatalf("text chunk printed as %q", got)
	}
	long := `{"hits":[` + strings.Repeat(`{"id":"go/sync#1","text":"a mutual exclusion lock"},`, 20) + `{}]}`
	got = formatFrame(frame(events.Artifact{ArtifactID: "search.output", Data: json.RawMessage(long), LastChunk: true}))
	if !strings.Contains(got, "search.output (") || !strings.HasSuffix(got, "…") || len(got) > 200 || strings.Contains(got, "\n") {
		t.Fatalf("step output printed as %q", got)
	}
	// A step's output in its completed status: its id and size, on the status's line.
	st, _ := json.Marshal(events.Status{State: events.StateCompleted, StepID: "search", Message: "completed on w1", CompletedSteps: 1, TotalSteps: 2,
		Artifact: &events.Artifact{ArtifactID: "search.output", Data: json.RawMessage(long), LastChunk: true}})
	got = formatFrame(events.Frame{Offset: 8, Type: "status", StepID: "search", Data: st})
	if want := fmt.Sprintf("completed: completed on w1 [1/2 steps] → search.output (%d bytes)", len(long)); !strings.HasSuffix(got, want) {
		t.Fatalf("completed status printed as %q, want it to end %q", got, want)
	}
}

// A custom event prints its payload (text quoted, bytes as a size) and
// its metadata in key order.
func TestFormatFrameCustom(t *testing.T) {
	frame := func(c events.Custom) events.Frame {
		b, _ := json.Marshal(c)
		return events.Frame{Offset: 9, Type: "custom", Data: b}
	}
	got := formatFrame(frame(events.NewCustom([]byte(`{"ticket":"OPS-12"}`), map[string]string{"source": "jira", "by": "ops"})))
	if !strings.HasSuffix(got, `"{\"ticket\":\"OPS-12\"}" by=ops source=jira`) {
		t.Fatalf("custom JSON printed as %q", got)
	}
	got = formatFrame(frame(events.NewCustom([]byte{0xff, 0x01}, nil)))
	if !strings.HasSuffix(got, "(2 bytes)") {
		t.Fatalf("custom bytes printed as %q", got)
	}
}
