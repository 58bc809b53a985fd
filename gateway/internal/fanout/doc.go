// Package fanout carries a gateway's live event streams (WebSocket, SSE,
// A2A, the tenant feed) from JetStream to each connection's bounded send
// queue. Every subscriber replays a workflow's stored events through a
// follower of its own (bus.Follow), as fast as its client takes them,
// then joins the workflow's hub: one follower per workflow per gateway,
// with no consumer on the server (it subscribes to the events the stream
// republishes), whose frames are
// encoded once (AppendFrame) and pushed into every joined subscriber's
// Queue without waiting (hub.go).
//
// Events enter through Source (*bus.Bus); they leave as Items that a
// stream's one writer takes from its Queue (Head, Pop) and writes in its
// own format. A client that falls a whole queue behind once live
// overflows its queue (ErrSlow, Queue.Overflow) and resumes from its
// offset. The package is the gateway's and its protocol subpackages'
// alone: it knows neither HTTP nor any protocol.
package fanout
