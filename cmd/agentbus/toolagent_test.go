package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/toolagent"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/llm"
)

// TestToolAgentNeedsAModel: offline (no --llm-url) the tool-calling
// agent is not served — not faked — and asking for it by name is a usage
// error; with a model it is served.
func TestToolAgentNeedsAModel(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	served := func(t *testing.T, caps []string, chat *llm.Chat) ([]string, error) {
		t.Helper()
		env := bustest.New(t)
		list, closeAll, err := builtinAgents(context.Background(), caps, agentDeps{b: env.Bus, log: log, chat: chat})
		if closeAll != nil {
			defer closeAll()
		}
		var out []string
		for _, a := range list {
			out = append(out, a.Card().Capabilities...)
		}
		return out, err
	}
	if got, err := served(t, []string{"echo", toolagent.Capability}, nil); err == nil || !strings.Contains(err.Error(), "--llm-url") {
		t.Fatalf("agent asked for offline: %v, %v", got, err)
	}
	var ee *exitError
	if _, err := served(t, []string{toolagent.Capability}, nil); !errors.As(err, &ee) || ee.code != exitUsage {
		t.Fatalf("not a usage error: %v", err)
	}
	chat, err := llm.NewChat(llm.ChatConfig{URL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := served(t, []string{toolagent.Capability}, chat); err != nil || !slices.Equal(got, []string{toolagent.Capability}) {
		t.Fatalf("with a model: %v, %v", got, err)
	}
}
