// Package bustest starts a real, in-process nats-server with JetStream
// (package broker) for one test: a random port, a t.TempDir() file store, the agentbus streams
// and buckets provisioned, and everything stopped by t.Cleanup.
//
// Each call to New gives the test its own server, so tests run in parallel
// without sharing state. Env values are safe for concurrent use.
package bustest
