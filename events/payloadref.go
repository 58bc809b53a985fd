package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Large payloads. A step's input, output or artifact data larger than a
// threshold (256 KiB by default, well under NATS's 1 MiB message limit)
// is stored in the JetStream object store AGENTBUS_PAYLOADS and travels
// as a reference in its place: the JSON value
//
//	{"$agentbus_ref": {"bucket": "AGENTBUS_PAYLOADS", "key": "<tenant>/<workflow>/<step>/<attempt>/output-<sha256[:16]>",
//	                   "size": 52428800, "sha256": "<hex>", "content_type": "application/json"}}
//
// Why a value in the JSON and not a CloudEvents dataref header: an output
// does not stay in the message it came in. The orchestrator copies it
// into the checkpoint, into the next step's dependency_outputs, into the
// complete event's result and outputs, and the gateway into state and
// SSE/WebSocket frames. A header would be lost at the first copy; a value
// travels through every hop unchanged, and the orchestrator, which only
// copies it, needs no code for it at all. The key "$agentbus_ref" is
// reserved: an object whose only member it is, is a reference wherever
// it stands — JSON Schema's "$ref" was not taken because agents return
// schemas as data.

// RefKey is the one member of a payload reference object.
const RefKey = "$agentbus_ref"

// MaxRefLen bounds the encoded length of a reference: a longer value is
// never one, so telling a large payload from a reference costs a length
// check and telling a small one costs a substring search.
const MaxRefLen = 2048

// ErrBadRef: a value names RefKey but is not a well-formed reference.
var ErrBadRef = errors.New("events: malformed payload reference")

// PayloadRef locates a payload in a JetStream object store.
type PayloadRef struct {
	// Bucket is the object store: always AGENTBUS_PAYLOADS today.
	Bucket string `json:"bucket"`
	// Key is the object's name; its first two "/"-separated segments are
	// the tenant and the workflow the payload belongs to.
	Key string `json:"key"`
	// Size is the payload's length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the payload's SHA-256, lowercase hex: a reader checks it.
	SHA256 string `json:"sha256"`
	// ContentType is the payload's media type: application/json for step
	// data.
	ContentType string `json:"content_type,omitempty"`
}

type refEnvelope struct {
	Ref *PayloadRef `json:"$agentbus_ref"`
}

var refMarker = []byte(`"` + RefKey + `"`)

// MentionsRef reports whether raw may hold a reference anywhere (it names
// RefKey): cheap, a substring search; a false answer is certain.
func MentionsRef(raw []byte) bool { return bytes.Contains(raw, refMarker) }

// ParseRef tells whether raw is a payload reference (an object whose only
// member is RefKey) and returns it. A value that is clearly not one
// (longer than MaxRefLen, or not naming RefKey) costs no decoding. One
// that names RefKey as its only member but is malformed is ErrBadRef.
func ParseRef(raw []byte) (PayloadRef, bool, error) {
	if len(raw) > MaxRefLen || !MentionsRef(raw) {
		return PayloadRef{}, false, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || len(members) != 1 {
		return PayloadRef{}, false, nil
	}
	if _, ok := members[RefKey]; !ok {
		return PayloadRef{}, false, nil
	}
	var env refEnvelope
	if err := json.Unmarshal(raw, &env); err != nil || env.Ref == nil {
		return PayloadRef{}, false, fmt.Errorf("%w: %s", ErrBadRef, raw)
	}
	if err := env.Ref.Validate(); err != nil {
		return PayloadRef{}, false, err
	}
	return *env.Ref, true, nil
}

// Validate reports what a reference lacks.
func (r PayloadRef) Validate() error {
	var errs []error
	if r.Bucket == "" {
		errs = append(errs, errors.New("no bucket"))
	}
	if r.Key == "" {
		errs = append(errs, errors.New("no key"))
	}
	if r.Size < 0 {
		errs = append(errs, fmt.Errorf("size %d", r.Size))
	}
	if len(r.SHA256) != 64 {
		errs = append(errs, fmt.Errorf("sha256 %q is not 64 hex digits", r.SHA256))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrBadRef, errors.Join(errs...))
	}
	return nil
}

// JSON encodes the reference as the value that travels in place of its
// payload.
func (r PayloadRef) JSON() json.RawMessage {
	b, _ := json.Marshal(refEnvelope{Ref: &r})
	return b
}

// String is the reference for people: key, size and type.
func (r PayloadRef) String() string {
	return fmt.Sprintf("%s/%s (%d bytes, %s)", r.Bucket, r.Key, r.Size, r.ContentType)
}
