package watermill_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/agentbus/agentbus"
	abwm "github.com/agentbus/agentbus/watermill"
)

// Add a message to a workflow's event log with a Publisher, and read it
// back, unchanged, with a Subscriber of the tenant's events.
func ExampleNewPublisher() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "agentbus-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ready := make(chan agentbus.Info, 1)
	stopped := make(chan error, 1)
	go func() {
		stopped <- agentbus.Run(ctx, agentbus.Config{DataDir: dir, NoGateway: true,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(i agentbus.Info) { ready <- i }})
	}()
	b := (<-ready).Bus

	pub, err := abwm.NewPublisher(abwm.PublisherConfig{Bus: b})
	if err != nil {
		log.Fatal(err)
	}
	m := message.NewMessage("deploy-7", []byte("deployed v1.4.2"))
	m.Metadata.Set(abwm.MetaWorkflow, "release-1-4")
	m.Metadata.Set("env", "prod")
	if err := pub.Publish("acme", m); err != nil {
		log.Fatal(err)
	}

	sub, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: b, ConsumerGroup: "audit"})
	if err != nil {
		log.Fatal(err)
	}
	msgs, err := sub.Subscribe(ctx, "acme")
	if err != nil {
		log.Fatal(err)
	}
	got := <-msgs
	got.Ack()
	fmt.Println(got.UUID, string(got.Payload))
	fmt.Println(got.Metadata.Get("env"), got.Metadata.Get(abwm.MetaType), got.Metadata.Get(abwm.MetaWorkflow), got.Metadata.Get(abwm.MetaOffset))

	_ = sub.Close()
	cancel()
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// deploy-7 deployed v1.4.2
	// prod custom release-1-4 1
}
