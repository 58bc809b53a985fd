// Package subflow runs child workflows for a running step: the machinery
// shared by the agents that start workflows of their own, the
// tool-calling agent (each tool call is a child) and the sub-workflow
// agent (capability "workflow").
//
// Data enters as a Child (its id, query or plan, extra metadata, a time
// bound) and the step's agents.Request. Runner.Run reads the parent's
// checkpoint for what the child inherits (priority, nesting depth),
// submits the child on the tenant's submit subject with the parent's user
// and role and metadata naming the parent workflow and step, and follows
// the child's events to its end. Data leaves as an Outcome: the child's
// result, or how it failed or was canceled, with its error code.
//
// A child's id is derived from the step attempt (ID), so a step
// redelivered after its worker died re-attaches to the child it had
// started: Run finds the child's checkpoint and follows it (or reads its
// end from the checkpoint) rather than submitting again. When the step's
// context ends because its workflow was canceled or its time ran out, Run
// cancels the child; when it ends because the worker is stopping, the
// child is left running for the step's next delivery to follow.
//
// Children nest: each carries its depth in metadata "depth" (the parent's
// plus one), and Run refuses a child deeper than Config.MaxDepth, which
// stops a workflow that starts itself.
package subflow
