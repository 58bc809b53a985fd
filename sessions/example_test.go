package sessions_test

import (
	"fmt"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/sessions"
)

func ExampleResolve() {
	history := []events.Turn{
		{N: 1, WorkflowID: "w1", Query: "how does sync.RWMutex work", Answer: "A RWMutex is a reader/writer mutual exclusion lock."},
		{N: 2, WorkflowID: "w2", Query: "how do I parse a URL query string with net/url", Answer: "ParseQuery parses the URL-encoded query string."},
	}
	for _, q := range []string{"and what about its read lock?", "what about net/http?", "how do channels work"} {
		r := sessions.Resolve(q, history)
		fmt.Printf("%q → %q (follow-up %v, turn %d)\n", q, r.Query, r.FollowUp, r.Turn)
	}
	// Output:
	// "and what about its read lock?" → "sync.RWMutex read lock" (follow-up true, turn 1)
	// "what about net/http?" → "how do I parse a URL query string with net/http" (follow-up true, turn 2)
	// "how do channels work" → "how do channels work" (follow-up false, turn 0)
}
