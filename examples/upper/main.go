// Command upper is the README's example agent: it serves capability "upper".
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
)

type Upper struct{}

func (Upper) Card() agents.Card {
	return agents.Card{Name: "upper", Version: "1.0.0", Capabilities: []string{"upper"},
		Description: "Upper-cases text.", Examples: []string{"shout this sentence"}}
}

func (Upper) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var text string
	if err := json.Unmarshal(req.Input, &text); err != nil {
		return nil, fmt.Errorf("%w: input must be a string", agents.ErrPermanent) // no retry
	}
	_ = emit.Progress(ctx, 50, "upper-casing") // a progress event on the workflow's stream
	return json.Marshal(strings.ToUpper(text)) // req.DependencyOutputs holds upstream outputs
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	b, err := bus.Connect(ctx, bus.Config{URL: "nats://127.0.0.1:4222"})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: b, Agents: []agents.Agent{Upper{}}})
	if err != nil {
		panic(err)
	}
	_ = w.Run(ctx) // registers, serves, heartbeats; on SIGTERM finishes or hands back its steps
}
