package entities_test

import (
	"fmt"
	"time"

	"github.com/agentbus/agentbus/agents/entities"
)

func ExampleExtract() {
	now := time.Date(2024, 6, 12, 15, 4, 5, 0, time.UTC)
	out := entities.Extract("OpenAI news from San Francisco last week", now)
	for _, e := range out.Entities {
		fmt.Println(e.Type, e.Text)
	}
	fmt.Println(out.Filters.From.Format(time.DateOnly), out.Filters.To.Format(time.DateOnly))
	// Output:
	// ORG OpenAI
	// PLACE San Francisco
	// DATE last week
	// 2024-06-03 2024-06-09
}
