package main

import (
	"encoding/json"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
)

// TestKilledWorkerHandedStepCompletesElsewhere SIGKILLs the worker
// running a step that was handed back to it with the verdict on the step
// before (eager dispatch). Nothing stores that step's request, so
// JetStream has nothing to deliver again: the watchdog finds the step
// lost once its worker's lease (that worker's --ack-wait, 2 s) is due and
// dispatches it again, well within --step-lease (9 s; a StepLease is what
// such a step waited before), and the other worker completes it. Every
// step completes once.
func TestKilledWorkerHandedStepCompletesElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	const stepLease = 9 * time.Second
	c := startClusterServing(t, []string{"--step-lease", stepLease.String(), "--ack-wait", "2s"}, "--ack-wait", "2s")
	procs := []*proc{c.worker(t), c.worker(t)}
	wf := postWorkflow(t, c.httpURL, `{"plan":{"steps":[{"id":"a","capability":"sleep","input":{"ms":10}},`+
		`{"id":"b","capability":"sleep","input":{"ms":3000},"depends_on":["a"]}]}}`)
	type task struct {
		Status     string `json:"status"`
		Attempt    int    `json:"attempt"`
		HandedWith string `json:"handed_with"`
		LeaseMS    int64  `json:"handed_lease_ms"`
	}
	taskB := func() task {
		var st struct {
			Tasks map[string]task `json:"tasks"`
		}
		r, err := http.Get(c.httpURL + "/v1/workflows/" + wf)
		if err != nil {
			return task{}
		}
		defer r.Body.Close()
		_ = json.NewDecoder(r.Body).Decode(&st)
		return st.Tasks["b"]
	}
	eventually(t, 20*time.Second, "b running", func() bool { return taskB().Status == string(events.StateWorking) })
	if b := taskB(); b.HandedWith == "" || b.LeaseMS != 2000 || b.Attempt != 1 {
		t.Fatalf("b is %+v, want its first attempt handed back to a's worker with that worker's 2 s lease", b)
	}
	victim := c.holder(t, procs)
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	eventually(t, 2*stepLease, "b dispatched again", func() bool { return taskB().Attempt == 2 })
	took := time.Since(killed)
	t.Logf("b dispatched again %s after its worker was killed", took.Round(time.Millisecond))
	if took >= 2*stepLease/3 { // 9.8 s before handed steps had their worker's lease
		t.Errorf("b dispatched again %s after its worker was killed, want about its worker's 2 s lease, well within --step-lease %s", took.Round(time.Millisecond), stepLease)
	}
	frames := c.follow(t, wf)
	if end := frames[len(frames)-1]; end.Type != "complete" {
		t.Fatalf("workflow ended %s: %s", end.Type, end.Data)
	}
	done := map[string]int{}
	lost := false
	for _, f := range frames {
		var st events.Status
		if f.Type != "status" || json.Unmarshal(f.Data, &st) != nil {
			continue
		}
		if st.State == events.StateCompleted && f.StepID != "" {
			done[f.StepID]++
		}
		lost = lost || (f.StepID == "b" && st.Recovery == events.RecoveryLost)
	}
	if done["a"] != 1 || done["b"] != 1 {
		t.Errorf("steps completed %v, want a and b once each", done)
	}
	if !lost {
		t.Error("b's second attempt is not a recovery of a lost step")
	}
}
