package subjects

// Root is the first token of every agentbus subject.
const Root = "agentbus"

// Stream names (DESIGN.md §2).
const (
	// StreamWorkflows holds workflow submissions (work-queue retention).
	StreamWorkflows = "AGENTBUS_WORKFLOWS"
	// StreamSteps holds plan steps, one subject per capability (work-queue retention).
	StreamSteps = "AGENTBUS_STEPS"
	// StreamReplies holds step results and failures (work-queue retention).
	StreamReplies = "AGENTBUS_REPLIES"
	// StreamEvents holds every workflow's client event log (limits retention).
	StreamEvents = "AGENTBUS_EVENTS"
	// StreamDeadLetter holds steps that exhausted their deliveries, with the reason.
	StreamDeadLetter = "AGENTBUS_DEADLETTER"
)

// KV bucket names (DESIGN.md §2).
const (
	// BucketCheckpoints holds one checkpoint per workflow, keyed by CheckpointKey.
	BucketCheckpoints = "AGENTBUS_CHECKPOINTS"
	// BucketAgents holds agent registrations with a per-key TTL.
	BucketAgents = "AGENTBUS_AGENTS"
	// BucketControl records control messages (cancel) so late subscribers see them.
	BucketControl = "AGENTBUS_CONTROL"
	// BucketMemory holds the memory agent's per-tenant facts, keyed
	// "<tenant>.<fact hash>".
	BucketMemory = "AGENTBUS_MEMORY"
)

// ObjectUploads is the JetStream object store that holds uploaded
// documents until an ingest step has indexed them, named
// "<tenant>/<upload>/<n>".
const ObjectUploads = "AGENTBUS_UPLOADS"

// ObjectPayloads is the JetStream object store that holds step inputs,
// outputs and artifacts too large to travel in a message, named
// "<tenant>/<workflow>/<step>/<attempt>/<kind>-<sha256 prefix>"; they
// travel as references (events.PayloadRef) and go with their workflow.
const ObjectPayloads = "AGENTBUS_PAYLOADS"

// Durable consumer names shared by every instance of a role.
const (
	// ConsumerSubmissions is the orchestrators' shared consumer on StreamWorkflows.
	ConsumerSubmissions = "orchestrator-submissions"
	// ConsumerReplies is the orchestrators' shared consumer on StreamReplies.
	ConsumerReplies = "orchestrator-replies"
)

// Wildcard filters, each matching exactly one kind of subject for every
// tenant. Streams capture all but control messages, results and live
// events, which travel as core NATS messages.
const (
	AllSubmissions = Root + ".*.workflow.submit"
	AllSteps       = Root + ".*.step.*"
	AllReplies     = Root + ".*.reply.*"
	AllResults     = Root + ".*.result.*"
	AllEvents      = Root + ".*.events.*"
	AllLive        = Root + ".*.live.*"
	AllControl     = Root + ".*.control.*"
	AllDeadLetters = Root + ".*.deadletter.*"
)

// LiveRepublish is the events stream's republish destination: each event
// stored on AllEvents goes out again on its Live subject.
const LiveRepublish = Root + ".{{wildcard(1)}}.live.{{wildcard(2)}}"

// AgentsRoot is the root of the agents' micro-service endpoints. It sits
// outside "agentbus." on purpose: it belongs to no tenant.
const AgentsRoot = "agentbus-agents"
