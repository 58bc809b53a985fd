package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/mcptool"
)

// mcpServerHelp is --mcp-server's help.
const mcpServerHelp = "serve an MCP server's tools, each as capability tool_<NAME>_<tool>: " + mcptool.SpecSyntax +
	" (repeatable; HTTP headers from $AGENTBUS_MCP_HEADERS_<NAME>, Key=Value,… URL-encoded)"

// mcpToolAgents connects to the MCP server of each --mcp-server spec and
// returns one agent per server; close ends their sessions (stopping
// stdio servers).
func mcpToolAgents(ctx context.Context, specs []string, log *slog.Logger) (list []agents.Agent, close func(), err error) {
	var opened []*mcptool.Agent
	close = func() {
		for _, a := range opened {
			_ = a.Close()
		}
	}
	seen := map[string]bool{}
	for _, spec := range specs {
		s, err := mcptool.ParseSpec(spec, os.Getenv)
		if err != nil {
			close()
			return nil, nil, &exitError{code: exitUsage, msg: "--mcp-server: " + err.Error()}
		}
		if seen[s.Name] {
			close()
			return nil, nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--mcp-server: server name %q is given twice", s.Name)}
		}
		seen[s.Name] = true
		a, err := mcptool.New(ctx, mcptool.Config{Server: s, Logger: log})
		if err != nil {
			close()
			return nil, nil, fmt.Errorf("--mcp-server %s: %w", s.Name, err)
		}
		opened = append(opened, a)
		list = append(list, a)
	}
	return list, close, nil
}
