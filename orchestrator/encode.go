package orchestrator

import (
	fastjson "github.com/segmentio/encoding/json"

	"github.com/agentbus/agentbus/workflow"
)

// encode is a checkpoint's JSON as the bucket stores it: encoding/json's
// output (map keys sorted), except that raw JSON values — step inputs and
// outputs, event data in the outbox — are copied byte for byte rather
// than checked, compacted and HTML-escaped again, and no string is
// HTML-escaped (a checkpoint is never embedded in a page; any JSON
// reader reads it alike). Every raw value was decoded from JSON or
// encoded by Go before it got there, and going over each again on every
// transition was most of the encoding's time.
func encode(cp *workflow.Checkpoint) ([]byte, error) {
	return appendJSON(make([]byte, 0, 8192), cp)
}

func appendJSON(dst []byte, cp *workflow.Checkpoint) ([]byte, error) {
	return fastjson.Append(dst, cp, fastjson.SortMapKeys|fastjson.TrustRawMessage)
}

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
	// Every revision at zstd's fastest level, a finished workflow's last
	// one too: the better level saved it 16–28 bytes of the 10.5–20.7 KB
	// a workflow keeps (BenchmarkStorage) at twice the time (54 µs against
	// 27 in a one-step workflow's profile), most of it resetting the
	// bigger encoder's tables.
	return workflow.CompressCheckpoint(make([]byte, 0, len(js)/4+64), js)
}
