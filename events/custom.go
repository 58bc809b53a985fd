package events

import (
	"bytes"
	"encoding/json"
)

// Custom is the data of TypeCustom: an application's own message in a
// workflow's event log, as LangGraph's "custom" stream carries a node's
// own data. Its bytes travel unchanged: as JSON under Payload when they
// are JSON that re-encodes to the same bytes, otherwise base64 under
// PayloadBase64; no bytes, neither. Metadata holds the message's own
// string pairs.
type Custom struct {
	Payload       json.RawMessage   `json:"payload,omitempty"`
	PayloadBase64 []byte            `json:"payload_base64,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
}

// NewCustom holds payload and metadata so that Bytes returns payload
// exactly.
func NewCustom(payload []byte, metadata map[string]string) Custom {
	c := Custom{Metadata: metadata}
	if len(payload) == 0 {
		return c
	}
	if json.Valid(payload) {
		c.Payload = json.RawMessage(bytes.Clone(payload))
		// Marshalling compacts and escapes HTML; keep the JSON form only
		// where that changes nothing.
		if b, err := json.Marshal(c.Payload); err == nil && bytes.Equal(b, payload) {
			return c
		}
		c.Payload = nil
	}
	c.PayloadBase64 = bytes.Clone(payload)
	return c
}

// Bytes returns the payload's bytes as they were given to NewCustom.
func (c Custom) Bytes() []byte {
	if len(c.Payload) > 0 {
		return c.Payload
	}
	return c.PayloadBase64
}
