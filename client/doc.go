// Package client is the Go SDK of agentbus: it talks to a gateway over
// HTTP (New) the way the agentbus CLI does — the CLI is built on it — or
// to NATS straight (NewNATS), for Go programs on the bus's own network.
//
// A Client submits workflows (Submit, Fork), follows their events
// (Follow, an iterator that resumes across disconnects from the last
// offset it saw and the events stream's epoch, so that no event is lost
// or repeated, and that hands a reset — events the gateway could no
// longer replay — to the caller as an error value it can handle), waits
// for results (Wait), acts on running workflows (Cancel, Approve, Reject,
// Resume), reads their state and checkpoint history (State,
// Checkpoints), and lists and discovers agents (Agents, Discover).
//
// Errors the gateway answers come back as *APIError, with the status,
// the message and every problem with where it is (a JSON pointer into
// the body, a query parameter or a header); errors.Is(err, ErrNotFound)
// tells a 404. A Client is safe for concurrent use.
//
// The bodies it sends and reads are package api's wire types, the
// gateway's own (Submission is api.SubmitRequest, Submitted
// api.SubmitResponse); the package links neither the gateway nor a
// server.
package client
