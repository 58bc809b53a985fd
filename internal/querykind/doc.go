// Package querykind decides, deterministically and without a model,
// whether a search query is simple or complex. It is the one statement of
// those rules: the orchestrator's heuristic planner (orchestrator.Classify)
// chooses its flow by them and the profile selection agent grades a
// query's complexity by them, so the two always agree. A query string
// enters Classify and a Verdict leaves it; nothing is kept between calls.
package querykind
