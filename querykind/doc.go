// Package querykind reads search queries, deterministically and without a
// model. Classify decides whether a query is simple or complex: it is the
// one statement of those rules, so the orchestrator's heuristic planner
// (orchestrator.Classify) and the profile selection agent, which both use
// it, always agree. Understand separates what a query asks (its intent, a
// wish for detail, a comparison's sides) from what it searches for (its
// content words and Go identifiers), so that instruction words such as
// "compare" or "in detail" shape the plan and the report but never the
// search terms. A query string enters; a Verdict or an Understanding
// leaves; nothing is kept between calls, so every function is safe for
// concurrent use.
//
// It is a top-level package, not internal/, because product code imports
// it (the orchestrator, agents/compose, agents/profiles, agents/routing,
// agents/search, retrieval/eval); it sits at the bottom of the import
// layers beside subjects and schemas and imports only the standard
// library.
package querykind
