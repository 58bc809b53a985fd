// Package schemas owns the JSON Schemas (draft 2020-12, embedded in the
// binary) of every event's data, of the plan, and of every request body the
// gateway accepts, and Validate, which checks a JSON document against one of
// them and reports each problem with the JSON pointer of the offending value.
// Compile does the same for a schema that arrives over the wire (an MCP
// tool's input schema, which an agent registers).
//
// Data enters as raw JSON bytes from any boundary (NATS messages, HTTP
// bodies, plan files) and leaves as nil or a *ValidationError. The schemas are
// compiled once, on first use; Validate is safe for concurrent use.
package schemas
