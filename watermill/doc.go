// Package watermill adapts agentbus to Watermill
// (github.com/ThreeDotsLabs/watermill), in a package of its own so that
// the core does not depend on it.
//
// Subscriber is a Watermill message.Subscriber whose topic is a tenant:
// it yields every event of the tenant's workflows from the events
// stream, in order, on a durable JetStream consumer per consumer group
// and tenant, so that a Watermill router can forward agentbus events to
// any other Watermill Pub/Sub (SQL, Kafka, AMQP …) with its own
// middleware. Acking a message advances the durable cursor; a router
// restarted later goes on after the last acked event.
//
// Publisher is the other way: a message.Publisher whose topic is a
// tenant, adding each message to a workflow's event log (the workflow
// named by its MetaWorkflow metadata) as a custom event,
// io.agentbus.workflow.custom.v1, that every follower of the workflow
// sees and that a Subscriber gives back unchanged. Together they pass
// Watermill's own Pub/Sub test suite (pubsub/tests).
//
// Agent serves a capability with a Watermill message.HandlerFunc and
// Watermill middleware (retry, poison queue, correlation id …) while the
// agentbus worker runtime still owns the step message underneath:
// in-progress acks, delivery counts, retries across processes and the
// dead letter after MaxDeliver.
package watermill
