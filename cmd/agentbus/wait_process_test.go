package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// TestWaitSurvivesKill9: a workflow's wait steps — ten minutes, a few
// seconds, and a signal — hold no worker (no step request is ever
// published for them) and survive the SIGKILL of the one serve process
// that runs everything: after its restart on the same data the short wait
// ends on time, the signal (sent with the CLI) ends its wait, and the ten
// minutes still wait, their timer stored. Pause, unpause and cancel by the
// CLI then answer as documented.
func TestWaitSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	dir := t.TempDir()
	args := []string{"serve", "--data", dir, "--nats-addr", bustest.FreeAddr(t), "--http-addr", "127.0.0.1:0",
		"--capabilities", "echo", "--sample-corpus=false", "--heartbeat", "200ms"}
	p := startProc(t, args...)
	m := p.waitLine(t, readyLine)
	httpURL := m[2]
	const wf = "durable-waits"
	body, _ := json.Marshal(map[string]any{"workflow_id": wf, "plan": map[string]any{"steps": []map[string]any{
		{"id": "long", "capability": "wait", "input": map[string]string{"duration": "10m"}},
		{"id": "short", "capability": "wait", "input": map[string]string{"duration": "8s"}},
		{"id": "after_short", "capability": "echo", "depends_on": []string{"short"}},
		{"id": "gate", "capability": "wait", "input": map[string]string{"signal": "go", "timeout": "1h"}},
		{"id": "after_gate", "capability": "echo", "depends_on": []string{"gate"}},
	}}})
	resp, err := http.Post(httpURL+"/v1/workflows", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %s", resp.Status)
	}
	state := func(url string) workflow.Checkpoint {
		var cp workflow.Checkpoint
		getJSON(t, url+"/v1/workflows/"+wf, &cp)
		return cp
	}
	waiting := func(cp workflow.Checkpoint, ids ...string) bool {
		for _, id := range ids {
			if t := cp.Tasks[id]; t == nil || t.Status != events.StateWorking || t.Wait == nil {
				return false
			}
		}
		return true
	}
	eventually(t, 20*time.Second, "the three waits start", func() bool { return waiting(state(httpURL), "long", "short", "gate") })
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done

	p = startProc(t, args...)
	m = p.waitLine(t, readyLine)
	natsURL, httpURL := m[1], m[2]
	if cp := state(httpURL); !waiting(cp, "long", "gate") {
		t.Fatalf("after the restart the waits are gone: %+v", cp.Tasks)
	}
	code, out, stderr := cli(t, "signal", "--url", httpURL, "--json", wf, "go", `{"ok":true}`)
	var res events.ControlResult
	if code != exitCompleted || json.Unmarshal([]byte(out), &res) != nil || !res.Applied {
		t.Fatalf("signal: exit %d: %s%s", code, out, stderr)
	}
	eventually(t, 30*time.Second, "the short wait ends on its durable timer and the signal ends the gate", func() bool {
		cp := state(httpURL)
		return cp.Tasks["after_short"].Status == events.StateCompleted && cp.Tasks["after_gate"].Status == events.StateCompleted
	})
	cp := state(httpURL)
	compact := func(b []byte) string {
		var buf bytes.Buffer
		_ = json.Compact(&buf, b)
		return buf.String()
	}
	if compact(cp.Tasks["gate"].Output) != `{"ok":true}` || !strings.Contains(compact(cp.Tasks["short"].Output), `"waited":"8s"`) {
		t.Errorf("gate output %s, short output %s", cp.Tasks["gate"].Output, cp.Tasks["short"].Output)
	}
	long := cp.Tasks["long"]
	if long.Status != events.StateWorking || long.Wait.At == nil || long.Wait.At.Sub(*long.DispatchedAt) != 10*time.Minute {
		t.Fatalf("the ten minutes do not wait on: %+v (%+v)", long, long.Wait)
	}

	// No step request was ever published for a wait step, and the ten
	// minutes' timer is stored.
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	count := func(stream, subject string) uint64 {
		s, err := js.Stream(t.Context(), stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(t.Context(), jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subject]
	}
	stepSubj, _ := subjects.Step("default", workflow.CapabilityWait)
	timerSubj, _ := subjects.Timer("default", wf)
	if n := count(subjects.StreamSteps, stepSubj); n != 0 {
		t.Errorf("%d step requests on %s", n, stepSubj)
	}
	if n := count(subjects.StreamTimers, timerSubj); n == 0 {
		t.Errorf("no timer stored on %s for the ten minutes", timerSubj)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pause", "--reason", "look"}, exitCompleted, "paused"},
		{[]string{"pause"}, exitFailed, "paused already"},
		{[]string{"unpause"}, exitCompleted, "unpaused"},
		{[]string{"cancel"}, exitCompleted, "canceled"},
		{[]string{"signal"}, exitFailed, "already canceled"},
	} {
		a := append(c.args, "--url", httpURL, wf)
		if c.args[0] == "signal" {
			a = append(a, "go")
		}
		code, out, stderr := cli(t, a...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d (want %d), want %q in:\n%s%s", c.args, code, c.code, c.want, out, stderr)
		}
	}
}
