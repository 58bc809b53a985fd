package client_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/agentbus/agentbus"
	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
)

// runBus runs a whole agentbus with the echo agent in this process until
// ctx ends, and says where it listens.
func runBus(ctx context.Context, dir string) (agentbus.Info, <-chan error) {
	ready := make(chan agentbus.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- agentbus.Run(ctx, agentbus.Config{
			DataDir: dir, Agents: []agents.Agent{echo.Agent{}},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready:  func(i agentbus.Info) { ready <- i },
		})
	}()
	select {
	case i := <-ready:
		return i, done
	case err := <-done:
		log.Fatal(err)
		return agentbus.Info{}, nil
	}
}

// Submit a plan of two steps, wait for its result, then read the
// workflow's events from the first: each step's status changes, its
// output and the orchestrator's progress, up to the terminal event.
func ExampleClient_Submit() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "agentbus-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bus, stopped := runBus(ctx, dir)

	c, err := client.New(client.Config{URL: bus.HTTPURL})
	if err != nil {
		log.Fatal(err)
	}
	plan := &events.Plan{Steps: []events.PlanStep{
		{ID: "draft", Capability: "echo", Input: json.RawMessage(`{"text":"hello"}`)},
		{ID: "review", Capability: "echo", DependsOn: []string{"draft"}},
	}}
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "greeting", Plan: plan}); err != nil {
		log.Fatal(err) // an *APIError names what was wrong and where
	}
	res, err := c.Wait(ctx, "greeting")
	if err != nil {
		log.Fatal(err)
	}
	var out echo.Output
	if err := json.Unmarshal(res.Result, &out); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("result of %s, from %s\n", out.StepID, out.DependencyOutputs["draft"])

	for f, err := range c.Follow(ctx, "greeting", 0) {
		if err != nil {
			log.Fatal(err)
		}
		of := cmp.Or(f.StepID, "workflow")
		switch p, _ := client.Payload(f); p := p.(type) {
		case events.Status:
			if p.Artifact != nil { // a step completed: its output, and the workflow's progress
				fmt.Println(f.Type, of, p.State, p.CompletedSteps, "of", p.TotalSteps, "with", p.Artifact.ArtifactID)
				continue
			}
			fmt.Println(f.Type, of, p.State)
		case events.Complete:
			fmt.Println(f.Type, len(p.Outputs), "outputs")
		default:
			fmt.Println(f.Type, of)
		}
	}
	cancel()
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// result of review, from {"step_id":"draft","input":{"text":"hello"}}
	// status workflow submitted
	// status workflow working
	// status draft working
	// status draft completed 1 of 2 with draft.output
	// status review working
	// status review completed 2 of 2 with review.output
	// complete 2 outputs
}
