package subjects

// Names of the orchestrators' durable timers and leases: a stream of timer
// messages (a workflow's deadline, a dispatched step's lease) that only
// orchestrators read, and a bucket of coordination leases among them.
const (
	// StreamTimers holds durable timers, one subject per workflow
	// (work-queue retention, message schedules allowed). It lives apart
	// from StreamReplies because a timer that waits on its consumer counts
	// against the consumer's MaxAckPending, and a few hundred timers would
	// stall every reply behind them.
	StreamTimers = "AGENTBUS_TIMERS"
	// AllTimers is the filter of the timers due: what ConsumerTimers reads.
	AllTimers = Root + ".*.timer.*"
	// AllWatches is the filter of the watchdog timers not yet due:
	// message schedules that StreamTimers holds, one per workflow, until
	// the server fires them onto the workflow's Timer subject.
	AllWatches = Root + ".*.watch.*"
	// ConsumerTimers is the orchestrators' shared consumer on StreamTimers.
	ConsumerTimers = "orchestrator-timers"
	// BucketLeases holds leases that let one orchestrator at a time do a
	// job that needs no more than one (the scan of active checkpoints).
	BucketLeases = "AGENTBUS_LEASES"
	// LeaseScan is the key in BucketLeases of the checkpoint scan's lease.
	LeaseScan = "orchestrator-scan"
)

// Timer returns "agentbus.<tenant>.timer.<workflow>", where a workflow's
// durable timers wait.
func Timer(tenant, workflow string) (string, error) {
	return join(tenant, "timer", "workflow", workflow)
}

// Watch returns "agentbus.<tenant>.watch.<workflow>", where a workflow's
// watchdog timer is scheduled until it is due.
func Watch(tenant, workflow string) (string, error) {
	return join(tenant, "watch", "workflow", workflow)
}
