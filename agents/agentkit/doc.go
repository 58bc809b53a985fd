// Package agentkit holds what every built-in agent does the same way:
// decode and validate a step's input against its schema, take the step's
// query (from its input or the workflow), report progress, validate the
// output before it leaves, and try an LLM with a fallback to the agent's
// deterministic heuristic that is reported, never hidden — including
// reading the model's JSON answer against the agent's output schema
// (ParseLLM) and the flow around it (LLMFirst).
//
// Its sub-package kittest holds the helpers the agents' tests share.
package agentkit
