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
	return appendJSON(make([]byte, 0, 8192), cp)
}

func appendJSON(dst []byte, cp *workflow.Checkpoint) ([]byte, error) {
	return fastjson.Append(dst, cp, fastjson.EscapeHTML|fastjson.SortMapKeys|fastjson.TrustRawMessage)
}

// finalCompressMax bounds the revisions CompressFinalCheckpoint takes:
// small ones, where its fixed cost (its dictionary's tables reset: 15 µs
// once a workflow, for 49 of a four-step echo workflow's 417 bytes) buys
// the most. Past it the cost grows with the size (a 10-step workflow's
// 7 KB last revision: about 40 µs, 3 % of a busy orchestrator's CPU at 16
// such chains in flight) for a saving small against the content.
const finalCompressMax = 4 << 10

// store is a checkpoint as the bucket stores it: its JSON (encode),
// compressed against the workflow package's dictionary unless
// Config.PlainCheckpoints. The JSON is built in a pooled buffer.
func (o *Orchestrator) store(cp *workflow.Checkpoint) ([]byte, error) {
	if o.cfg.PlainCheckpoints {
		return encode(cp)
	}
	buf, _ := o.jsonBufs.Get().(*[]byte)
	if buf == nil {
		b := make([]byte, 0, 8192)
		buf = &b
	}
	defer o.jsonBufs.Put(buf)
	js, err := appendJSON((*buf)[:0], cp)
	if err != nil {
		return nil, err
	}
	*buf = js
	if cp.Status.Terminal() && len(cp.Outbox) == 0 && len(js) <= finalCompressMax {
		// A finished workflow's last revision, the one that clears its
		// published outbox: kept for days, written once and after the
		// workflow's end was published, so compressed smaller at more
		// CPU. The terminal revision before it keeps the fast encoder:
		// it sits between the last reply and the complete event.
		return workflow.CompressFinalCheckpoint(make([]byte, 0, len(js)/4+64), js)
	}
	return workflow.CompressCheckpoint(make([]byte, 0, len(js)/4+64), js)
}
