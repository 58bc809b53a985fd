package client

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbus/agentbus/events"
)

// ErrUnknownFrame: a frame of a type Payload does not know (a newer
// gateway's); its raw data is still in the frame.
var ErrUnknownFrame = errors.New("client: unknown frame type")

// Payload decodes a frame's data into its type's payload:
// events.Status, events.Progress, events.Artifact, events.Complete,
// events.Error, events.Cancelled or events.Custom (values, not
// pointers; a Custom's Bytes are its payload), or, for a
// reset frame, the *ResetError Follow yields beside it.
func Payload(f Frame) (any, error) {
	var v any
	switch f.Type {
	case events.TypeStatus.Short():
		v = &events.Status{}
	case events.TypeProgress.Short():
		v = &events.Progress{}
	case events.TypeArtifact.Short():
		v = &events.Artifact{}
	case events.TypeComplete.Short():
		v = &events.Complete{}
	case events.TypeError.Short():
		v = &events.Error{}
	case events.TypeCancelled.Short():
		v = &events.Cancelled{}
	case events.TypeCustom.Short():
		v = &events.Custom{}
	case "reset":
		return resetError(f), nil
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownFrame, f.Type)
	}
	if len(f.Data) > 0 {
		if err := json.Unmarshal(f.Data, v); err != nil {
			return nil, fmt.Errorf("client: %s frame at offset %d: %w", f.Type, f.Offset, err)
		}
	}
	switch p := v.(type) {
	case *events.Status:
		return *p, nil
	case *events.Progress:
		return *p, nil
	case *events.Artifact:
		return *p, nil
	case *events.Complete:
		return *p, nil
	case *events.Error:
		return *p, nil
	case *events.Custom:
		return *p, nil
	default:
		return *(v.(*events.Cancelled)), nil
	}
}
