package client_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
)

func TestPayload(t *testing.T) {
	frame := func(typ string, v any) client.Frame {
		b, _ := json.Marshal(v)
		return client.Frame{Type: typ, Offset: 3, Data: b}
	}
	if p, err := client.Payload(frame("status", events.Status{State: events.StateWorking, Message: "go"})); err != nil || p.(events.Status).Message != "go" {
		t.Fatalf("status: %v, %v", p, err)
	}
	if p, err := client.Payload(frame("artifact", events.Artifact{ArtifactID: "answer", Data: json.RawMessage(`"hi"`)})); err != nil || p.(events.Artifact).ArtifactID != "answer" {
		t.Fatalf("artifact: %v, %v", p, err)
	}
	if p, err := client.Payload(frame("error", events.Error{Code: "step_failed"})); err != nil || p.(events.Error).Code != "step_failed" {
		t.Fatalf("error: %v, %v", p, err)
	}
	if p, err := client.Payload(frame("reset", map[string]any{"reason": "epoch", "resume_from": 9, "status": "working"})); err != nil ||
		p.(*client.ResetError).ResumeFrom != 9 || p.(*client.ResetError).State.Status != events.StateWorking {
		t.Fatalf("reset: %v, %v", p, err)
	}
	if p, err := client.Payload(frame("custom", events.NewCustom([]byte("x"), map[string]string{"k": "v"}))); err != nil ||
		string(p.(events.Custom).Bytes()) != "x" || p.(events.Custom).Metadata["k"] != "v" {
		t.Errorf("custom: %v %v", p, err)
	}
	if _, err := client.Payload(client.Frame{Type: "novel"}); !errors.Is(err, client.ErrUnknownFrame) {
		t.Fatalf("unknown type: %v", err)
	}
	if _, err := client.Payload(client.Frame{Type: "progress", Data: json.RawMessage(`{"percent":"x"}`)}); err == nil {
		t.Fatal("a bad payload decoded")
	}
}
