// Package agentkit holds what every built-in agent does the same way:
// decode and validate a step's input against its schema, validate the
// output before it leaves, and try an LLM with a fallback to the agent's
// deterministic heuristic that is reported, never hidden.
package agentkit
