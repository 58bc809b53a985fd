// Package subworkflow is the built-in sub-workflow agent (capability
// "workflow"): a step that runs a whole workflow as its child and waits
// for its result.
//
// Data enters as the step's input (schema "agent.workflow.input"):
// exactly one of "query" (the child is planned as any submission is) and
// "plan" (run as given, with the parent's query), optional "metadata"
// added to the child's, and an optional "timeout". The child is submitted
// in the parent's tenant with its user, role and priority and metadata
// "parent_workflow", "parent_step" and "depth" (package subflow, shared
// with the tool-calling agent), which the dashboard and GET
// /v1/workflows?parent_workflow=ID use to link parent and child.
//
// Data leaves as the step's output (schema "agent.workflow.output"): the
// child's result and its workflow id. A child that fails or is canceled
// fails the step permanently (it is not retried: the child ran) with the
// child's error code and message. When the parent is canceled, or the
// step's time runs out, the step's context ends and the child is
// canceled. The child's id is derived from the step attempt, so a step
// redelivered after its worker died re-attaches to the child it had
// started instead of starting another.
//
// The agent holds a worker slot while its child runs: a parent waiting
// on long children needs a worker --concurrency to match, and the child
// is bounded by the worker's --step-timeout.
package subworkflow
