// Package toolagent is the tool-calling agent (capability "agent", #26):
// an OpenAI-compatible tool-calling loop over the capabilities the
// registry lists with an input schema (MCP tools, remote skills, built-in
// agents), as many as the tool permissions table lets the workflow's
// tenant and role run.
//
// A step's query (or its input's "query") goes to the model with those
// capabilities as tools. Each tool call the model makes runs as a child
// workflow on the bus: a one-step plan of the capability with the call's
// arguments as input, submitted on the tenant's submit subject with the
// parent's user, role and priority and metadata naming the parent
// workflow, step and call (package subflow, which the sub-workflow agent
// shares). So a call is durable (stored, checkpointed, resumed by any
// orchestrator), traced (the child's spans descend from the step's
// context), subject to the permissions and their confirmations, visible
// on the dashboard as a workflow of its own, and cancelled when the step
// is (its context ends: the agent cancels the child). The agent follows
// the child's events to its end, reports each call as progress on its
// own step, and gives the model the result. The loop is bounded by
// iterations (model calls), tokens and time; the final answer cites the
// tool results it used, [N], as the composer cites passages.
//
// The agent needs a model: without one (no --llm-url) it is not served.
package toolagent
