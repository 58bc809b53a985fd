package api_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
)

func ExampleProblem() {
	for _, p := range []api.Problem{
		{In: api.InQuery, Name: "limit", Message: `"x": want an integer in [1, 1000]`},
		{In: api.InBody, Pointer: "/plan/steps/0/capability", Message: "required"},
	} {
		b, _ := json.Marshal(p)
		fmt.Printf("%s\n%s\n", b, p)
	}
	// Output:
	// {"in":"query","name":"limit","message":"\"x\": want an integer in [1, 1000]"}
	// query parameter limit: "x": want an integer in [1, 1000]
	// {"in":"body","pointer":"/plan/steps/0/capability","message":"required"}
	// /plan/steps/0/capability: required
}

func ExampleControlRequest_Control() {
	no := false
	c := api.ControlRequest{Approve: &no, StepID: "review", Comment: "numbers are off"}.Control(events.ActionApprove)
	fmt.Printf("%s %s: %s\n", c.Action, c.StepID, c.Reason)
	// Output:
	// reject review: numbers are off
}
