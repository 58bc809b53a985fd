// Package workflow is agentbus's workflow engine: a workflow's whole state
// (Checkpoint, its steps' Tasks) and the one pure function that moves it,
// Apply.
//
// Apply takes a checkpoint, an Input (a plan, a step's reply, a control, a
// due timer or lease verdict) and the time, and returns the Effects to
// carry out: client events and step requests to publish (in order, each
// with its dedup key), timers to set, workers to stop, and the
// Transitions that happened, from which the orchestrator counts metrics and
// ends spans. It does no I/O and reads no clock: the orchestrator loads the
// checkpoint, calls Apply, stores the result with a compare-and-set
// together with the effects as its outbox, then publishes them. Every
// write of a workflow's or a step's status happens here (apply.go and the
// files it calls), and an input a state does not accept is refused with an
// *IllegalError naming both; an input that came late or twice (a reply
// redelivered, a timer after the end) is ErrStale. Either way the
// checkpoint is left as it was.
//
// Raw JSON values an input carries (a step's output, a signal's data, a
// plan step's input) must be JSON: the orchestrator decodes each from
// the wire, checked, before it gets here, and Apply builds its events
// from them without parsing them again (events.MarshalChecked).
//
// The package imports only events, subjects and schemas, so that every
// process and the Go SDK can read checkpoints without linking the
// orchestrator.
package workflow
