package agentbus_test

import (
	"context"
	"fmt"
	"log"
	"os/signal"
	"syscall"

	"github.com/agentbus/agentbus"
	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
)

// Run the whole bus inside a program, with the program's own agents,
// until SIGTERM.
func ExampleRun() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err := agentbus.Run(ctx, agentbus.Config{
		DataDir:  "./data",
		HTTPAddr: "127.0.0.1:8080",
		Agents:   []agents.Agent{echo.Agent{}},
		Ready:    func(i agentbus.Info) { fmt.Println("NATS at", i.NATSURL, "HTTP at", i.HTTPURL) },
	})
	if err != nil {
		log.Fatal(err)
	}
}
