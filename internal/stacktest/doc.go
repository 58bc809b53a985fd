// Package stacktest starts, for a test, what a running agentbus is made
// of — an embedded NATS server (bus/bustest), a worker with the agents
// the test names, an orchestrator, and optionally a gateway that can be
// restarted on its port — and stops it all when the test ends. It is for
// tests of packages that sit on top of agentbus (the SDK, the Watermill
// adapter, interop), so that each does not carry its own copy.
package stacktest
