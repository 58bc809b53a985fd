package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/permissions"
)

// permFlags is --tool-permissions, the tool permissions table of the
// roles that accept plans (serve, orchestrator, gateway) and of the
// workers whose tool-calling agent offers a model only what it allows.
type permFlags struct {
	value permValue
}

// register adds --tool-permissions (AGENTBUS_TOOL_PERMISSIONS through the
// usual env binding) and a PreRunE that reports a table that could not
// be read or is invalid.
func (f *permFlags) register(cmd *cobra.Command) {
	cmd.Flags().Var(&f.value, "tool-permissions", `per tenant and role, the capabilities (MCP tools tool_<server>_<tool>, remote skills, agents) `+
		`a workflow may run: a JSON file {"<tenant>|*": {"<role>|*": {"allow": [globs], "deny": [globs], "requires_confirmation": [globs]}}}; `+
		`a denied step refuses its plan naming the rule, a requires_confirmation step waits for an approval showing its input; `+
		`AGENTBUS_TOOL_PERMISSIONS may hold the file's path or the JSON itself`)
	checkBeforeRun(cmd, func() error {
		if f.value.err != nil {
			return &exitError{code: exitUsage, msg: f.value.err.Error()}
		}
		return nil
	})
}

// table is the table given, nil (allow all) without the flag.
func (f *permFlags) table() permissions.Table { return f.value.table }

// permValue is the value of --tool-permissions: a path, or inline JSON
// (first non-space character '{'). Its error waits for the PreRunE, as
// --quotas' does.
type permValue struct {
	spec  string
	table permissions.Table
	err   error
}

func (v *permValue) String() string { return v.spec }

// Type names the value in --help.
func (v *permValue) Type() string { return "FILE" }

func (v *permValue) Set(s string) error {
	*v = permValue{spec: s}
	trimmed := strings.TrimSpace(s)
	switch {
	case trimmed == "":
		return nil
	case trimmed[0] == '{':
		if v.table, v.err = permissions.Parse([]byte(trimmed)); v.err != nil {
			v.err = fmt.Errorf("--tool-permissions (inline JSON, e.g. from AGENTBUS_TOOL_PERMISSIONS): %w", v.err)
		}
		return nil
	}
	data, err := os.ReadFile(s)
	if err != nil {
		v.err = fmt.Errorf("--tool-permissions: %w", err)
		return nil
	}
	if v.table, v.err = permissions.Parse(data); v.err != nil {
		v.err = fmt.Errorf("--tool-permissions %s: %w", s, v.err)
	}
	return nil
}
