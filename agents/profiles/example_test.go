package profiles_test

import (
	"fmt"

	"github.com/agentbus/agentbus/agents/profiles"
)

func ExampleSelect() {
	out := profiles.Select(`how do I fix "connection refused" in my redis client?`, []string{"bm25", "vector"}, false)
	fmt.Println(out.Intent, out.Ensemble)
	for _, c := range out.Selected {
		fmt.Println(c.Name, c.Confidence)
	}
	// Output:
	// troubleshooting true
	// vector 0.9
	// bm25 0.7
}
