// Package broker runs the NATS server with JetStream that agentbus embeds:
// `agentbus serve`, agentbus.Run and the test servers of bus/bustest start
// it in their own process, alone or as one server of a cluster.
//
// A Config comes in (data directory, client address, an optional
// nats-server configuration file, a cluster to join, how often JetStream
// syncs); Start opens the file store under the data directory, says at
// once when a port is taken (a *ListenError) or the server gives up
// (ErrStartFailed), and returns a *Server once it accepts connections.
// What leaves is the server's client URL and an in-process connection
// (Server.InProcessConn), which package bus takes as plain values: bus,
// and so every worker and client, never links nats-server. Shutdown of a
// clustered server goes through lame duck mode first, so that its
// leaderships move to its peers before it stops.
//
// This is the only package besides cmd/ that imports nats-server. A
// *Server is safe for concurrent use.
package broker
