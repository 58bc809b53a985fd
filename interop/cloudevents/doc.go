// Package cloudevents proves that the CloudEvents SDK for Go
// (github.com/cloudevents/sdk-go/v2) with its NATS JetStream protocol
// binding (github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2) is an
// agentbus client: a cloudevents.Client submits a workflow on
// agentbus.<tenant>.workflow.submit and receives its events from
// agentbus.<tenant>.events.<workflow> (stream AGENTBUS_EVENTS) with every
// attribute, extension and byte of data as agentbus stored them.
//
// It has no non-test code. It is a package of its own so that only its
// tests depend on the binding; the core (events, bus, orchestrator) uses
// the SDK's event package alone. The README's CloudEvents SDK example is
// the function submitAndFollow in its tests, and a test checks that the two
// read the same.
//
// The NATS protocol binding (binary mode) maps datacontenttype to the
// ce-datacontenttype header like any attribute; events.Encode writes it
// (beside Content-Type, which older clients read), so the SDK sees
// "application/json" on every agentbus event. Where the SDK's binding
// differs from the protocol binding, or needs options to read agentbus's
// streams, the tests adapt and say so:
//   - the SDK never acks what it receives, so the example follows with an
//     ordered consumer (no acks, in order);
//   - the SDK client handles received events on GOMAXPROCS goroutines, so
//     the example asks for one, blocking;
//   - the SDK matches header names case-sensitively ("ce-" and
//     "content-type"), which agentbus's lowercase ce- headers satisfy;
//   - under tenant isolation (internal/natsauth) the binding's NewSender and
//     NewConsumer fail for a tenant's user, since they call STREAM.INFO
//     (and then try to create the stream); a Sender built directly, and the
//     binding's Message over a JetStream ordered consumer, still work.
package cloudevents
