// Package mcpserver is agentbus as a Model Context Protocol server: an
// *mcp.Server (the official Go SDK's) whose tools submit a query or a
// plan, follow a workflow to its end with a progress notification per
// event, approve, reject or cancel it and search the tenant's documents,
// and whose resources are a workflow's state (agentbus://workflows/{id})
// and its answer (agentbus://workflows/{id}/answer).
//
// Data enters as MCP requests and leaves as requests to a gateway made
// through the Go SDK's client package: the server holds no state of its
// own and links no server. Which gateway client serves a request is
// Config.Client's choice: Static for `agentbus mcp` over stdio (one
// client, the command's URL, token and tenant), HeaderClient for the
// gateway's /mcp, where each HTTP request's own bearer token (and, for
// an admin, X-Agentbus-Tenant) is sent back to the gateway that received
// it, so the gateway's auth decides the tenant and the role of every
// call exactly as it does for its REST API. Handler wraps the server in
// the SDK's streamable HTTP handler for that mount.
//
// Everything here is safe for concurrent use.
package mcpserver
