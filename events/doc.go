// Package events owns the CloudEvents agentbus puts on the wire: their types,
// their payload structs, and their encoding in CloudEvents binary content mode
// on NATS headers (ce-id, ce-source, ce-type, ce-specversion, ce-time,
// ce-subject, ce-datacontenttype and the extensions ce-tenantid,
// ce-workflowid, ce-stepid, ce-traceparent, as the CloudEvents NATS protocol
// binding maps them, plus Content-Type), with the data as JSON.
//
// Data enters through Decode, from the headers and body of a NATS message
// that anyone may have published: Decode checks the envelope with the
// CloudEvents SDK, checks the tenant/workflow/step ids with package subjects,
// and checks the data against its JSON Schema from package schemas; anything
// malformed is rejected with a *DecodeError that names the header or the JSON
// pointer at fault. Data leaves through Encode as a Message that package bus
// turns into a NATS message; this package never imports nats.go.
//
// Frame is the JSON shape clients receive over WebSocket and SSE.
//
// All functions are safe for concurrent use; Envelope values are plain data.
package events
