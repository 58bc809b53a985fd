package routing_test

import (
	"context"
	"fmt"

	"github.com/agentbus/agentbus/agents/routing"
)

func ExampleAgent_Route() {
	a, err := routing.New(routing.Config{})
	if err != nil {
		panic(err)
	}
	out := a.Route(context.Background(), "compare raft and paxos in depth", nil, nil)
	fmt.Println(out.RecommendedAgents[0].Capability, out.Fallbacks)
	// Output:
	// detailed_report [search echo]
}
