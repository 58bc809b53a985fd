package fanout

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/events"
)

// AppendFrame appends f as JSON: the bytes json.Marshal(f) gives when
// f.Data is compact, without reflection. Every subscriber encodes every
// event it receives, so this is on the gateway's hottest path. f.Data is
// trusted to be valid JSON: it comes from events.Decode, which validated it
// against its schema, or from json.Marshal.
func AppendFrame(dst []byte, f events.Frame) []byte {
	dst = append(dst, `{"offset":`...)
	dst = strconv.AppendUint(dst, f.Offset, 10)
	dst = append(dst, `,"epoch":`...)
	dst = appendString(dst, f.Epoch)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, f.Type)
	dst = append(dst, `,"workflow_id":`...)
	dst = appendString(dst, f.WorkflowID)
	dst = append(dst, `,"tenant_id":`...)
	dst = appendString(dst, f.TenantID)
	dst = append(dst, `,"time":"`...)
	dst = f.Time.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	if f.StepID != "" {
		dst = append(dst, `,"step_id":`...)
		dst = appendString(dst, f.StepID)
	}
	dst = append(dst, `,"data":`...)
	if len(f.Data) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, f.Data...)
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string, escaped as encoding/json does.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
