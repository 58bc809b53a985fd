package events_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbus/agentbus/events"
)

func ExampleEncode() {
	e := events.Envelope{
		ID:         events.EventKey("acme", "wf-42", 3),
		Source:     events.SourceOrchestrator,
		Type:       events.TypeStatus,
		Time:       time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC),
		TenantID:   "acme",
		WorkflowID: "wf-42",
		Data:       []byte(`{"state":"working"}`),
	}
	msg, err := events.Encode(e)
	if err != nil {
		panic(err)
	}
	keys := make([]string, 0, len(msg.Header))
	for k := range msg.Header {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	for _, k := range keys {
		fmt.Printf("%s: %s\n", k, msg.Header[k][0])
	}
	fmt.Printf("%s\n", msg.Data)
	// Output:
	// ce-datacontenttype: application/json
	// ce-id: acme/wf-42/3
	// ce-source: /agentbus/orchestrator
	// ce-specversion: 1.0
	// ce-tenantid: acme
	// ce-time: 2025-03-14T15:09:26Z
	// ce-type: io.agentbus.workflow.status.v1
	// ce-workflowid: wf-42
	// {"state":"working"}
}
