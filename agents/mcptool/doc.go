// Package mcptool serves the tools of an MCP server as agentbus
// capabilities: `agentbus worker --mcp-server 'files=stdio:mcp-files --root /tmp'`
// connects to the server with the official MCP Go SDK's client (a
// command over stdio, or streamable HTTP), lists its tools (every page),
// and serves each as capability tool_<server>_<tool>, one Agent per server.
//
// Names. A capability is one NATS subject token and part of a consumer
// name (subjects.TokenPattern: lowercase letters, digits, '_' and '-', at
// most 63 characters, never '.'), so tool.files.read_file cannot be one:
// "agentbus.acme.step.tool.files.read_file" would be three tokens, and
// the per-capability consumer filter agentbus.*.step.<capability> would
// not match it. A server's name may hold no '_', so the capability
// tool_<server>_<tool> splits back unambiguously at its second '_'. A
// tool name is lowercased and any other character becomes '_'; a name
// that then collides with another tool's, or makes the capability too
// long, is cut and given an 8-hex-digit hash of the tool's real name
// (Capability).
//
// Data enters as a plan step: its input is the tool's arguments (a JSON
// object; none means {}), checked against the tool's inputSchema before
// the call — a step whose input does not fit fails, without retries,
// naming the JSON pointer. The schemas also go into the agent's Card
// (agents.Card.InputSchemas), so the registry carries them and an
// explicit plan with a bad input is refused at submission. Data leaves as
// the step's output — the result's structuredContent when present, else
// its content list as JSON — and as one artifact per content item (text,
// image, audio, resource, resource link); the tool's progress
// notifications become the step's progress events. A result with isError fails
// the step without retries; so does a JSON-RPC error from the server. A
// step whose context ends (cancel, timeout) cancels the call: the SDK
// sends notifications/cancelled.
//
// Lifecycle. New connects once (a server that cannot be reached at start
// is an error: its tools, hence the capabilities, are unknown). A
// supervisor then keeps the session: when it ends (a stdio server that
// exits, an HTTP session that fails) the agent reports itself unhealthy
// (agents.HealthChecker) and reconnects, restarting a stdio server, with
// exponential backoff. notifications/tools/list_changed makes it list
// the tools again: descriptions and input schemas follow at once, a tool
// that is gone fails its steps, and a new tool is logged — the
// capabilities a worker consumes are fixed when it starts, so serving it
// needs a restart. An *Agent is safe for concurrent use; Close stops it.
package mcptool
