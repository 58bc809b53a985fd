package sleep_test

import (
	"encoding/json"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/sleep"
)

func TestSleepInput(t *testing.T) {
	for _, tt := range []struct {
		name, input string
		delivery    int
		want        sleep.Output
	}{
		{"ms", `{"ms": 5}`, 1, sleep.Output{SleptMS: 5, Delivery: 1}},
		{"no input", ``, 1, sleep.Output{SleptMS: 0, Delivery: 1}},
		// A step routed by semantic discovery carries the planner's input.
		{"planner input", `{"query": "sleep 500 ms", "ensemble": false}`, 1, sleep.Output{SleptMS: 0, Delivery: 1}},
		{"redelivered", `{"ms": 3600000, "redelivered_ms": 2}`, 2, sleep.Output{SleptMS: 2, Delivery: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := kittest.Step("s", tt.input, "")
			req.Delivery = tt.delivery
			rec := &kittest.Recorder{}
			out, err := sleep.Agent{}.Handle(t.Context(), req, rec)
			if err != nil {
				t.Fatal(err)
			}
			var got sleep.Output
			if err := json.Unmarshal(out, &got); err != nil || got != tt.want {
				t.Fatalf("output %s (%v), want %+v", out, err, tt.want)
			}
			if !rec.Said("sleeping") {
				t.Errorf("no progress event: %v", rec.Messages())
			}
		})
	}
}

func TestSleepRefusesBadInput(t *testing.T) {
	var a agents.Handler = sleep.Agent{}
	kittest.CheckBadInputs(t, a, []kittest.BadInput{
		{Name: "ms as a string", Input: `{"ms": "500"}`, Says: `/ms: got a JSON string, want an integer number of milliseconds in [0, 3600000]`},
		{Name: "ms as a fraction", Input: `{"ms": 1.5}`, Says: `/ms: got a JSON number 1.5`},
		{Name: "negative ms", Input: `{"ms": -1}`, Says: `/ms: -1 not in [0, 3600000]`},
		{Name: "more than an hour", Input: `{"ms": 3600001}`, Says: `/ms: 3600001 not in [0, 3600000]`},
		{Name: "bad redelivered_ms", Input: `{"ms": 1, "redelivered_ms": -5}`, Says: `/redelivered_ms: -5 not in`},
		{Name: "not an object", Input: `[500]`, Says: `want an object {"ms": N}`},
	})
}
