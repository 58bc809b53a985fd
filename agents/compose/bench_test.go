package compose_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/compose"
)

// BenchmarkCompose composes from 10 hits of ~12 sentences each, the
// search agent's default page.
func BenchmarkCompose(b *testing.B) {
	var many []hit
	for i := range 10 {
		var text strings.Builder
		for j := range 12 {
			fmt.Fprintf(&text, "Sentence %d of document %d says that consumers acknowledge message %d after processing it. ", j, i, i*j)
		}
		many = append(many, hit{ID: fmt.Sprintf("d%d#0", i), DocID: fmt.Sprintf("d%d", i), Title: "Doc", Text: text.String()})
	}
	deps := map[string]string{"search": searchOutput("how do consumers acknowledge messages", many...)}
	a, err := compose.New(compose.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, capability := range []string{compose.CapabilitySummarize, compose.CapabilityDetailedReport} {
		b.Run(capability, func(b *testing.B) {
			req := request(capability, `{"query":"how do consumers acknowledge messages"}`, deps)
			for b.Loop() {
				if _, err := a.Handle(b.Context(), req, &kittest.Recorder{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
