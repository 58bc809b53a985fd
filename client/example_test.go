package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/agentbus/agentbus/client"
)

// Submit a question and wait for its answer.
func Example() {
	ctx := context.Background()
	c, err := client.New(client.Config{URL: "http://127.0.0.1:8080", Token: "secret-token"})
	if err != nil {
		log.Fatal(err)
	}
	sub, err := c.Ask(ctx, "how do I parse a URL query string in Go?")
	if err != nil {
		log.Fatal(err) // an *APIError names what was wrong and where
	}
	res, err := c.Wait(ctx, sub.WorkflowID)
	var failed *client.WorkflowError
	if errors.As(err, &failed) {
		log.Fatalf("%s: %s", failed.Code, failed.Message)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Result))
}

// Follow a workflow's events as they happen, resuming after the last
// offset seen if the connection drops, and go on after a reset.
func ExampleClient_Follow() {
	ctx := context.Background()
	c, err := client.New(client.Config{URL: "http://127.0.0.1:8080"})
	if err != nil {
		log.Fatal(err)
	}
	for f, err := range c.Follow(ctx, "wf-1", 0) {
		var reset *client.ResetError
		switch {
		case errors.As(err, &reset):
			fmt.Println("missed events; the workflow is", reset.State.Status)
			continue
		case err != nil:
			log.Fatal(err)
		}
		fmt.Println(f.Offset, f.Type, f.StepID)
	}
}
