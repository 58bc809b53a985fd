package enhance_test

import (
	"fmt"

	"github.com/agentbus/agentbus/agents/enhance"
)

func ExampleEnhance() {
	out := enhance.Enhance("How do I speed up postgres queries?", 0)
	for _, v := range out.Variants {
		fmt.Println(v)
	}
	// Output:
	// How do I speed up postgres queries?
	// speed up postgres queries
	// accelerate postgresql query
	// steps to speed up postgres queries
}
