package main

import (
	"errors"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/api"
	sdk "github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/mcpserver"
)

// newMCP is `agentbus mcp`: the MCP server of package mcpserver over
// stdio, acting through the gateway --url names as --token's tenant, the
// way an assistant or an IDE starts a local MCP server.
func newMCP() *cobra.Command {
	var url, tenant, token string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve agentbus to an assistant as an MCP server over stdio",
		Long: "Serve agentbus as a Model Context Protocol server on stdin and stdout, acting through the gateway\n" +
			"--url names with --token (or AGENTBUS_TOKEN) as --tenant, like ask. Tools: submit, follow, approve,\n" +
			"reject, cancel, search; resources: agentbus://workflows/{id} (state) and agentbus://workflows/{id}/answer.\n" +
			"Logs go to stderr. A gateway serves the same over streamable HTTP at /mcp.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := sdk.New(sdk.Config{URL: url, Tenant: tenant, Token: token})
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			srv, err := mcpserver.New(mcpserver.Config{Client: mcpserver.Static(c), Version: currentVersion().Version, Logger: log})
			if err != nil {
				return err
			}
			err = srv.Run(cmd.Context(), &mcp.StdioTransport{})
			if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || cmd.Context().Err() != nil {
				return nil // the client went away, or we were told to stop
			}
			return err
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:8080", "agentbus gateway URL")
	cmd.Flags().StringVar(&tenant, "tenant", api.DefaultTenant, "tenant id (auth off, or an admin token)")
	cmd.Flags().StringVar(&token, "token", "", "bearer token (when the gateway has auth on); also AGENTBUS_TOKEN")
	return cmd
}
