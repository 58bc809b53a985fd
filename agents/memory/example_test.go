package memory_test

import (
	"fmt"

	"github.com/agentbus/agentbus/agents/memory"
)

func ExampleExtract() {
	for _, f := range memory.Extract("Hi! My name is Ada and I work with Go. What is RRF?") {
		fmt.Printf("%s %s %q — %s\n", f.Subject, f.Predicate, f.Object, f.You)
	}
	// Output:
	// user name "ada" — your name is Ada
	// user works_with "go" — you work with Go
}
