// Package schedule owns schedules (#25): a workflow template started at
// every slot of a cron expression or an interval, in a time zone, with
// jitter, an overlap policy and a pause switch.
//
// A schedule's Spec and its State live in the bucket
// subjects.BucketSchedules (Store). While it is not paused, the schedule
// is armed: a repeating JetStream message schedule in
// subjects.StreamSchedules that the server fires onto the schedule's fire
// subject once per slot, replicated and surviving restarts. Orchestrators
// share one durable consumer of the fires; the fire's handler (in package
// orchestrator) reads the Spec, applies Decide, and submits the workflow
// "<schedule_id>-<slot unix seconds>" (RunID), so a slot whose fire is
// delivered twice still starts one workflow.
//
// Cron is this package's cron grammar, the server's: it computes the
// slots a backfill walks and the next fire a GET shows. Everything here is
// safe for concurrent use unless a type says otherwise.
package schedule
