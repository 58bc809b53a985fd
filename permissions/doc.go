// Package permissions is agentbus's tool permissions table (#26): per
// tenant and role, which capabilities a workflow may run — MCP tools
// (tool_<server>_<tool>), remote A2A skills, built-in agents — as glob
// patterns in allow and deny lists, and which must be confirmed by a
// person before each run (requires_confirmation).
//
// A Table enters from JSON (Parse, the --tool-permissions flag) and is
// read, never changed: the orchestrator checks every plan it accepts
// (Check, Plan), the gateway refuses an explicit plan early, and the
// tool-calling agent offers a model only the tools the table allows. The
// package does no I/O and holds no state; a Table is safe for concurrent
// use once built.
package permissions
