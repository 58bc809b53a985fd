// Package api holds agentbus's wire types: the bodies of the HTTP API's
// requests and answers (SubmitRequest, SubmitResponse, ForkRequest,
// ControlRequest, Revision), the shape of its error answers (ErrorResponse,
// Error, Problem and where a problem is, Quota for a quota_exceeded
// answer), the headers a client sends (TenantHeader, UserHeader,
// IdempotencyHeader), and Submit and SubmitOnce, the one way a submission
// is put on the bus — by the gateway's HTTP and A2A front doors and by the
// Go SDK's NATS client alike. SubmitOnce adds what every front door checks
// before it publishes: that a requested workflow id is free, the caller's
// admission (the gateway's quotas), and an idempotency key, recorded
// first-writer-wins in a Claims store (the bus's idempotency bucket) with
// a hash of the request (RequestHash), so that the same key and request
// start one workflow however often they are sent. ClaimDelivered is the
// same check for an orchestrator that takes a key from a bare publish's
// NATSIdempotencyHeader.
//
// Data enters as JSON a client sent (checked against the schemas of package
// schemas by whoever reads it) or as values a program builds; it leaves as
// the same JSON, or through Submit as a workflow.submitted event handed to
// a Publisher. The package imports only events, subjects, schemas and
// workflow, never the bus, the gateway or a server, so that the Go SDK and
// any program that speaks to agentbus can use these types without linking
// what answers them.
//
// Every type is plain data, safe to share once built; Submit, SubmitOnce
// and ClaimDelivered are safe for concurrent use if their Publisher,
// Claims and hooks are.
package api
