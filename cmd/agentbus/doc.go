// Command agentbus runs agentbus and talks to it.
//
//	agentbus serve                      # embedded NATS + orchestrator + echo agent + HTTP gateway
//	agentbus ask "what is NATS?"        # submit a workflow, follow it live (a live view on a terminal, tui*.go)
//	agentbus ask --plan plan.json "q"   # submit an explicit plan
//	agentbus watch WORKFLOW --from 12   # replay a workflow's events after offset 12, then follow
//	agentbus ask --plain "q"            # one line per event even on a terminal (as piped; --json: JSON lines)
//	agentbus bench --concurrency 64     # load a deployment (--url or --nats); HDR percentiles; every workflow checked (bench*.go)
//	agentbus mcp --url URL --token T    # agentbus as an MCP server over stdio, for an assistant (mcp.go; package mcpserver)
//	agentbus version                    # version, commit, Go and embedded nats-server versions
//
// Every flag can also be set from the environment as AGENTBUS_<FLAG>, with
// dashes as underscores (--nats-addr → AGENTBUS_NATS_ADDR); a flag on the
// command line wins. This package owns flags, wiring and process lifecycle
// only; everything else lives in the library packages.
package main
