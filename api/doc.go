// Package api holds agentbus's wire types: the bodies of the HTTP API's
// requests and answers (SubmitRequest, SubmitResponse, ForkRequest,
// ControlRequest, Revision), the shape of its error answers (ErrorResponse,
// Error, Problem and where a problem is), the headers a client sends
// (TenantHeader, UserHeader), and Submit, the one way a submission is put
// on the bus — by the gateway's HTTP and A2A front doors and by the Go
// SDK's NATS client alike.
//
// Data enters as JSON a client sent (checked against the schemas of package
// schemas by whoever reads it) or as values a program builds; it leaves as
// the same JSON, or through Submit as a workflow.submitted event handed to
// a Publisher. The package imports only events, subjects, schemas and
// workflow, never the bus, the gateway or a server, so that the Go SDK and
// any program that speaks to agentbus can use these types without linking
// what answers them.
//
// Every type is plain data, safe to share once built; Submit is safe for
// concurrent use if its Publisher is.
package api
