package watermill_test

import (
	"os"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/agentbus/agentbus/bus/bustest"
	abwm "github.com/agentbus/agentbus/watermill"
)

// suiteWorkflow is the workflow the suite's messages, which carry no
// agentbus metadata, are added to.
const suiteWorkflow = "wm-suite"

// soak runs the suite at its full sizes (5,000–10,000 messages a test)
// instead of its short ones.
var soak = os.Getenv("AGENTBUS_WATERMILL_SOAK") != ""

// pubSub makes a Publisher and a Subscriber of one consumer group on env.
func pubSub(t *testing.T, env *bustest.Env, group string) (message.Publisher, message.Subscriber) {
	t.Helper()
	return pubSubInFlight(t, env, group, 1)
}

// pubSubInFlight is pubSub with a subscriber of the given InFlight.
func pubSubInFlight(t *testing.T, env *bustest.Env, group string, inFlight int) (message.Publisher, message.Subscriber) {
	t.Helper()
	pub, err := abwm.NewPublisher(abwm.PublisherConfig{Bus: env.Bus, Workflow: suiteWorkflow})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: env.Bus, ConsumerGroup: group, CloseTimeout: time.Second, InFlight: inFlight})
	if err != nil {
		t.Fatal(err)
	}
	return pub, sub
}

// Watermill's own Pub/Sub suite, where its features apply: persistence,
// consumer groups, order, redelivery on nack and on a subscriber closed
// with a message in hand. TestReconnect is skipped (it restarts the
// broker with an outside command; the embedded server has none), and
// delivery is at least once, as with JetStream's other adapters.
func TestWatermillPubSubSuite(t *testing.T) {
	env := bustest.New(t)
	features := tests.Features{
		ConsumerGroups:  true,
		GuaranteedOrder: true,
		Persistent:      true,
		ForceShort:      !soak,
	}
	tests.TestPubSub(t, features,
		func(t *testing.T) (message.Publisher, message.Subscriber) { return pubSub(t, env, "suite") },
		func(t *testing.T, group string) (message.Publisher, message.Subscriber) { return pubSub(t, env, group) },
	)
}

// The suite against the windowed mode (InFlight 64). Its order tests do
// not apply: TestNoAck wants the next message held back until the
// previous is acked, and TestPublishSubscribeInOrder reads through ten
// subscribers of one group at once; the windowed mode does neither
// (SubscriberConfig.InFlight). TestWindowedSubscriberOrder checks the
// order it keeps: stream order on one subscription's channel.
func TestWatermillPubSubSuiteWindowed(t *testing.T) {
	env := bustest.New(t)
	features := tests.Features{
		ConsumerGroups: true,
		Persistent:     true,
		ForceShort:     !soak,
	}
	tests.TestPubSub(t, features,
		func(t *testing.T) (message.Publisher, message.Subscriber) { return pubSubInFlight(t, env, "suite", 64) },
		func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
			return pubSubInFlight(t, env, group, 64)
		},
	)
}

// A new consumer group reads a topic's whole history, as Kafka's do: the
// suite's NewSubscriberReceivesOldMessages, with a new group for every
// subscriber (in one group, a subscriber goes on after what the group
// has acked, which TestWatermillPubSubSuite checks).
func TestWatermillNewGroupReceivesOldMessages(t *testing.T) {
	env := bustest.New(t)
	n := 0
	tests.TestNewSubscriberReceivesOldMessages(t,
		tests.TestContext{TestID: tests.NewTestID(), Features: tests.Features{Persistent: true, NewSubscriberReceivesOldMessages: true}},
		func(t *testing.T) (message.Publisher, message.Subscriber) {
			n++
			return pubSub(t, env, "fresh-"+string(rune('a'+n)))
		})
}
