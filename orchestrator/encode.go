package orchestrator

import (
	fastjson "github.com/segmentio/encoding/json"

	"github.com/agentbus/agentbus/workflow"
)

// encode is a checkpoint's JSON as the bucket stores it: encoding/json's
// output (map keys sorted), except that raw JSON values — step inputs and
// outputs, event data in the outbox — are copied as they are rather than
// checked and compacted again. Every one of them was decoded from JSON
// or encoded by Go before it got there, and checking them again was most
// of the encoding's time: the checkpoint is encoded on every transition.
func encode(cp *workflow.Checkpoint) ([]byte, error) {
	return fastjson.Append(make([]byte, 0, 8192), cp, fastjson.EscapeHTML|fastjson.SortMapKeys|fastjson.TrustRawMessage)
}
