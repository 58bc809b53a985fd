package kittest_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/llm"
)

func TestChatServer(t *testing.T) {
	tests := []struct {
		name, content string
		status        int
		wantErr       bool
	}{
		{"answers", `{"ok":true}`, 200, false},
		{"fails", "model crashed", 400, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, srv := kittest.Chat(t, tt.status, tt.content)
			got, err := c.CompleteJSON(t.Context(), "sys", "usr")
			var se *llm.StatusError
			if tt.wantErr != (err != nil) || (err == nil && got != tt.content) ||
				(err != nil && (!errors.As(err, &se) || se.StatusCode != tt.status || se.Message != tt.content)) {
				t.Fatalf("answer %q err %v", got, err)
			}
			// The client may retry a failure: every request counts.
			sys, usr := srv.Systems(), srv.Users()
			if len(sys) == 0 || len(usr) != len(sys) || slices.ContainsFunc(sys, func(s string) bool { return s != "sys" }) ||
				slices.ContainsFunc(usr, func(s string) bool { return s != "usr" }) {
				t.Fatalf("systems %q users %q", srv.Systems(), srv.Users())
			}
		})
	}
}

func TestRecorder(t *testing.T) {
	var r kittest.Recorder
	if err := r.Progress(t.Context(), 101, "too far"); err == nil {
		t.Fatal("percent 101 accepted")
	}
	if err := r.Progress(t.Context(), 50, "halfway there"); err != nil {
		t.Fatal(err)
	}
	if err := r.Artifact(t.Context(), "a", "answer", "x", false, true); err != nil {
		t.Fatal(err)
	}
	if !r.Said("halfway") || r.Said("too far") || len(r.Chunks()) != 1 || r.Chunks()[0].Data != "x" {
		t.Fatalf("messages %q chunks %+v", r.Messages(), r.Chunks())
	}
}
