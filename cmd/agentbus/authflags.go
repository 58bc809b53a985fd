package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/gateway"
)

// authFlags are the authentication flags of the roles that serve HTTP
// (serve, gateway).
type authFlags struct {
	tokens tokensValue
}

// register adds --tokens to cmd (AGENTBUS_TOKENS through the usual env
// binding) and a PreRunE that reports a bad token table.
func (f *authFlags) register(cmd *cobra.Command) {
	cmd.Flags().Var(&f.tokens, "tokens",
		`token table turning auth on: a JSON file, either [{"token","tenant","role"}, …] or {"<token>": {"tenant","role"}, …}, `+
			`role client, admin or viewer; AGENTBUS_TOKENS may hold the file's path or the JSON itself. `+
			`Unset: auth off, one tenant "default" (or X-Agentbus-Tenant)`)
	checkBeforeRun(cmd, f.check)
}

// check reports a token table that could not be read or is invalid.
func (f *authFlags) check() error {
	if f.tokens.err != nil {
		return &exitError{code: exitUsage, msg: f.tokens.err.Error()}
	}
	return nil
}

// config is the gateway's auth configuration; check must have passed.
func (f *authFlags) config() gateway.AuthConfig {
	return gateway.AuthConfig{Tokens: f.tokens.tokens}
}

// tokensValue is the value of --tokens: a path, or inline JSON (first
// non-space character '[' or '{'), which is how AGENTBUS_TOKENS can carry
// the table without a file. Set never fails: pflag and the env binding
// would quote the value, which may be secrets, in their message; the error
// waits for check, which names only the file.
type tokensValue struct {
	spec   string
	inline bool
	tokens []gateway.Token
	err    error
}

func (v *tokensValue) String() string {
	if v.inline {
		return "(inline JSON)"
	}
	return v.spec
}

// Type names the value in --help.
func (v *tokensValue) Type() string { return "FILE" }

func (v *tokensValue) Set(s string) error {
	*v = tokensValue{spec: s}
	trimmed := strings.TrimSpace(s)
	switch {
	case trimmed == "":
		return nil // auth off
	case trimmed[0] == '[' || trimmed[0] == '{':
		v.inline = true
		if v.tokens, v.err = gateway.ParseTokens([]byte(trimmed)); v.err != nil {
			v.err = fmt.Errorf("--tokens (inline JSON, e.g. from AGENTBUS_TOKENS): %w", v.err)
		}
		return nil
	}
	data, err := os.ReadFile(s)
	if err != nil {
		v.err = fmt.Errorf("--tokens: %w", err)
		return nil
	}
	if v.tokens, v.err = gateway.ParseTokens(data); v.err != nil {
		v.err = fmt.Errorf("--tokens %s: %w", s, v.err)
	}
	return nil
}

// checkBeforeRun has a command run check after its PreRunE, if any, and
// before anything else: flags that cannot work stop it before it connects
// or starts anything.
func checkBeforeRun(cmd *cobra.Command, check func() error) {
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(c, args); err != nil {
				return err
			}
		}
		return check()
	}
}
