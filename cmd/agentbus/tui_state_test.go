package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// The recorded sequences under testdata/tui are `ask --json` output of a
// real serve (worker names replaced): diamond (echo/sleep, completes),
// fallback (a step fails and falls back: a retry), approval (a step
// awaits a decision, then is approved), fail (a step fails, the rest is
// skipped), cancel (canceled while a step sleeps), query (the default
// pipeline with a streamed answer).

func recorded(t *testing.T, name string) []events.Frame {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "tui", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []events.Frame
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var fr events.Frame
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, fr)
	}
	return out
}

// planOf is a checkpoint holding only a plan, as GET state has it early.
func planOf(t *testing.T, plan string) workflow.Checkpoint {
	t.Helper()
	var cp workflow.Checkpoint
	if err := json.Unmarshal([]byte(plan), &cp.Plan); err != nil {
		t.Fatal(err)
	}
	cp.Status = events.StateWorking
	return cp
}

// replay applies frames to a fresh view, the plan (if any) once the
// first step frame came, as the live model asks for it.
func replay(t *testing.T, frames []events.Frame, plan string) *workflowView {
	t.Helper()
	v := newWorkflowView(frames[0].WorkflowID, frames[0].TenantID)
	planned := plan == ""
	for _, f := range frames {
		v.apply(f)
		if !planned && f.StepID != "" {
			v.applySnapshot(planOf(t, plan), false)
			planned = true
		}
	}
	return v
}

type wantStep struct {
	phase   stepPhase
	retries int
	worker  string
}

func checkSteps(t *testing.T, v *workflowView, want map[string]wantStep) {
	t.Helper()
	if len(v.Steps) != len(want) {
		t.Errorf("%d steps, want %d", len(v.Steps), len(want))
	}
	for id, w := range want {
		s := v.step(id)
		if s.Phase != w.phase || s.Retries != w.retries || s.Worker != w.worker {
			t.Errorf("step %s: %s retries %d worker %q; want %s retries %d worker %q",
				id, s.Phase, s.Retries, s.Worker, w.phase, w.retries, w.worker)
		}
	}
}

const (
	diamondPlan  = `{"steps":[{"id":"A","capability":"echo","input":"a"},{"id":"B","capability":"echo","depends_on":["A"]},{"id":"C","capability":"sleep","input":{"ms":200},"depends_on":["A"]},{"id":"D","capability":"echo","depends_on":["B","C"]}]}`
	fallbackPlan = `{"steps":[{"id":"A","capability":"sleep","input":{"ms":-1},"fallback":"echo"},{"id":"B","capability":"echo","depends_on":["A"]}]}`
	approvalPlan = `{"steps":[{"id":"A","capability":"echo","input":"a"},{"id":"R","capability":"echo","requires_approval":true,"depends_on":["A"]},{"id":"S","capability":"echo","depends_on":["R"]}]}`
	chainPlan    = `{"steps":[{"id":"A","capability":"echo","input":"a"},{"id":"B","capability":"sleep","input":{"ms":5000},"depends_on":["A"]},{"id":"C","capability":"echo","depends_on":["B"]}]}`
)

func TestTUIStateRecordedSequences(t *testing.T) {
	for _, tc := range []struct {
		name, plan string
		steps      map[string]wantStep
		terminal   string
		status     events.State
		failure    string // a part of the failure shown
	}{
		{name: "diamond", plan: diamondPlan, terminal: "complete", status: events.StateCompleted,
			steps: map[string]wantStep{"A": {stepCompleted, 0, "worker-1"}, "B": {stepCompleted, 0, "worker-1"},
				"C": {stepCompleted, 0, "worker-1"}, "D": {stepCompleted, 0, "worker-1"}}},
		{name: "fallback", plan: fallbackPlan, terminal: "complete", status: events.StateCompleted,
			steps: map[string]wantStep{"A": {stepCompleted, 1, "worker-1"}, "B": {stepCompleted, 0, "worker-1"}}},
		{name: "approval", plan: approvalPlan, terminal: "complete", status: events.StateCompleted,
			steps: map[string]wantStep{"A": {stepCompleted, 0, "worker-1"}, "R": {stepCompleted, 0, ""}, "S": {stepCompleted, 0, "worker-1"}}},
		{name: "fail", plan: chainPlan, terminal: "error", status: events.StateFailed, failure: "step_failed: step \"B\" (sleep) failed",
			steps: map[string]wantStep{"A": {stepCompleted, 0, "worker-1"}, "B": {stepFailed, 0, ""}, "C": {stepSkipped, 0, ""}}},
		{name: "cancel", plan: chainPlan, terminal: "cancelled", status: events.StateCanceled, failure: "canceled on request",
			steps: map[string]wantStep{"A": {stepCompleted, 0, "worker-1"}, "B": {stepCanceled, 0, ""}, "C": {stepSkipped, 0, ""}}},
		{name: "query", terminal: "complete", status: events.StateCompleted,
			steps: map[string]wantStep{"entity_extraction": {stepCompleted, 0, "worker-1"}, "memory": {stepCompleted, 0, "worker-1"},
				"search": {stepCompleted, 0, "worker-1"}, "summarize": {stepCompleted, 0, "worker-1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames := recorded(t, tc.name)
			v := replay(t, frames, tc.plan)
			checkSteps(t, v, tc.steps)
			if v.Terminal != tc.terminal || v.Status != tc.status {
				t.Errorf("terminal %q status %q, want %q %q", v.Terminal, v.Status, tc.terminal, tc.status)
			}
			if !strings.Contains(v.Failure, tc.failure) {
				t.Errorf("failure %q, want it to say %q", v.Failure, tc.failure)
			}
			if v.LastOffset != frames[len(frames)-1].Offset || v.Start != frames[0].Time || v.End != frames[len(frames)-1].Time {
				t.Errorf("offset %d start %v end %v", v.LastOffset, v.Start, v.End)
			}
			if tc.plan != "" && !v.PlanKnown {
				t.Error("plan not known")
			}
		})
	}
}

func TestTUIStateDiamondLive(t *testing.T) {
	frames := recorded(t, "diamond")
	v := newWorkflowView(frames[0].WorkflowID, frames[0].TenantID)
	v.applySnapshot(planOf(t, diamondPlan), false)
	if got := v.Stages; len(got) != 3 || len(got[1]) != 2 {
		t.Fatalf("stages %v, want A | B C | D", got)
	}
	// Up to the dispatch of B and C: A done, B and C running, D queued.
	var i int
	for i = 0; ; i++ {
		v.apply(frames[i])
		if frames[i].StepID == "C" {
			break
		}
	}
	checkSteps(t, v, map[string]wantStep{"A": {stepCompleted, 0, "worker-1"}, "B": {stepRunning, 0, ""},
		"C": {stepRunning, 0, ""}, "D": {stepQueued, 0, ""}})
	if v.Finished() || v.Status != events.StateWorking {
		t.Fatalf("finished %v status %s", v.Finished(), v.Status)
	}
	if d := v.step("D").DependsOn; len(d) != 2 || d[0] != "B" || d[1] != "C" {
		t.Fatalf("D depends on %v", d)
	}
	// The orchestrator's progress counts are the workflow's, not a step's.
	if v.TotalSteps != 4 || v.DoneSteps != 1 || v.step("A").Percent != 100 {
		t.Fatalf("progress %d/%d, A %v%%", v.DoneSteps, v.TotalSteps, v.step("A").Percent)
	}
	for _, f := range frames[i+1:] {
		v.apply(f)
	}
	if !strings.Contains(v.ResultJSON(), `"step_id": "D"`) || v.AnswerText() != "" {
		t.Fatalf("result %q answer %q", v.ResultJSON(), v.AnswerText())
	}
}

func TestTUIStateApprovalWait(t *testing.T) {
	frames := recorded(t, "approval")
	v := replay(t, frames[:7], approvalPlan) // up to R's "awaits approval"
	checkSteps(t, v, map[string]wantStep{"A": {stepCompleted, 0, "worker-1"}, "R": {stepAwaiting, 0, ""}, "S": {stepQueued, 0, ""}})
	if !v.awaiting() {
		t.Fatal("no step awaits")
	}
	out := renderView(v, testOpts(120, 0))
	if !strings.Contains(out, "awaiting approval") || !strings.Contains(out, "agentbus approve "+v.Workflow+" --step R") {
		t.Fatalf("the view does not say what to do:\n%s", out)
	}
	v.apply(frames[7]) // the orchestrator's count: R is settled for it
	v.apply(frames[8]) // approved
	if s := v.step("R"); s.Phase != stepCompleted || s.Note != "approved" {
		t.Fatalf("R after approval: %s %q", s.Phase, s.Note)
	}
}

func TestTUIStateStreamedAnswer(t *testing.T) {
	frames := recorded(t, "query")
	v := newWorkflowView(frames[0].WorkflowID, frames[0].TenantID)
	var answer string
	for _, f := range frames {
		v.apply(f)
		if f.Type == "artifact" {
			answer = v.AnswerText()
			if v.Finished() || answer == "" {
				t.Fatalf("after the artifact: finished %v answer %q", v.Finished(), answer)
			}
		}
	}
	if answer == "" || v.AnswerText() != answer || v.ResultJSON() != "" {
		t.Fatalf("answer %q, streamed %q, result %q", v.AnswerText(), answer, v.ResultJSON())
	}
	// Chunks of one artifact append; a new artifact without append starts over.
	v = newWorkflowView("w", "t")
	for i, c := range []string{`"Hel"`, `"lo "`, `"world"`} {
		a, _ := json.Marshal(events.Artifact{ArtifactID: "answer", StepID: "s", Data: json.RawMessage(c), Append: i > 0, LastChunk: i == 2})
		v.apply(events.Frame{Offset: uint64(i + 1), Type: "artifact", StepID: "s", Data: a})
		if i == 0 && v.AnswerText() != "Hel" {
			t.Fatalf("first chunk: %q", v.AnswerText())
		}
	}
	if v.AnswerText() != "Hello world" {
		t.Fatalf("assembled %q", v.AnswerText())
	}
	// A completed step's text output comes with its status (recorded
	// logs from before November 2026 have it as an artifact event).
	st, _ := json.Marshal(events.Status{State: events.StateCompleted, StepID: "t", Message: "completed on w",
		Artifact: &events.Artifact{ArtifactID: workflow.StepArtifactID("t"), Name: "echo output", Data: json.RawMessage(`"shout"`), LastChunk: true}})
	v.apply(events.Frame{Offset: 4, Type: "status", StepID: "t", Data: st})
	if a := v.Artifacts[len(v.Artifacts)-1]; a.ID != "t.output" || a.StepID != "t" || a.Text.String() != "shout" || !a.Closed {
		t.Fatalf("step output from its status: %+v", a)
	}
	if s := v.step("t"); s.Phase != stepCompleted {
		t.Fatalf("step t %s", s.Phase)
	}
}

// TestTUIStateReset: a reset frame (the cursor's events expired) carries
// the checkpoint: the view takes every step's state from it and says so.
func TestTUIStateReset(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "tui", "cancel.state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatal(err)
	}
	// As the gateway sends it: the checkpoint while B still ran.
	tasks := data["tasks"].(map[string]any)
	tasks["B"].(map[string]any)["status"] = "working"
	tasks["C"].(map[string]any)["status"] = "submitted"
	data["status"], data["reason"], data["resume_from"] = "working", "expired", 102
	reset, _ := json.Marshal(data)
	frames := recorded(t, "cancel")
	v := newWorkflowView(frames[0].WorkflowID, frames[0].TenantID)
	v.apply(events.Frame{Type: "connected", Data: json.RawMessage(`{}`)})
	v.apply(events.Frame{Type: "reset", WorkflowID: v.Workflow, Data: reset})
	if len(v.Notices) != 1 || !strings.Contains(v.Notices[0], "may have expired") || !strings.Contains(v.Notices[0], "after offset 102") {
		t.Fatalf("notices %q", v.Notices)
	}
	checkSteps(t, v, map[string]wantStep{"A": {stepCompleted, 0, "worker-1"}, "B": {stepRunning, 0, ""}, "C": {stepQueued, 0, ""}})
	if !v.PlanKnown || v.Query != "canc" || v.LastOffset != 102 || v.Start.IsZero() {
		t.Fatalf("plan known %v query %q offset %d start %v", v.PlanKnown, v.Query, v.LastOffset, v.Start)
	}
	for _, f := range frames {
		if f.Offset > 102 {
			v.apply(f)
		}
	}
	checkSteps(t, v, map[string]wantStep{"A": {stepCompleted, 0, "worker-1"}, "B": {stepCanceled, 0, ""}, "C": {stepSkipped, 0, ""}})
	out := renderView(v, testOpts(120, 0))
	if !strings.Contains(out, "! reset: events after your offset may have expired") {
		t.Fatalf("the reset is not shown:\n%s", out)
	}
	// An epoch reset says the stream was recreated.
	data["reason"] = "epoch"
	reset, _ = json.Marshal(data)
	v.apply(events.Frame{Type: "reset", Data: reset})
	if !strings.Contains(v.Notices[1], "recreated") {
		t.Fatalf("notices %q", v.Notices)
	}
}

// TestTUIStateSnapshotBehindFrames: a plan fetched after frames were
// applied keeps what the frames said, and steps that frames named keep
// their state in plan order.
func TestTUIStateSnapshotBehindFrames(t *testing.T) {
	frames := recorded(t, "diamond")
	v := newWorkflowView(frames[0].WorkflowID, frames[0].TenantID)
	for _, f := range frames[:5] {
		v.apply(f)
	}
	before := v.step("A").Phase
	v.applySnapshot(planOf(t, diamondPlan), false)
	if v.step("A").Phase != before || v.Steps[0].ID != "A" || v.Steps[3].ID != "D" || v.step("D").Phase != stepQueued {
		t.Fatalf("after the plan: A %s, order %s..%s, D %s", v.step("A").Phase, v.Steps[0].ID, v.Steps[3].ID, v.step("D").Phase)
	}
}
