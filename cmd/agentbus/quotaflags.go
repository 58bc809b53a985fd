package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/gateway"
)

// quotaFlags are the per-tenant quota flags of the roles that serve HTTP
// (serve, gateway): defaults for every tenant, and a table that sets them
// per tenant.
type quotaFlags struct {
	running, queuedSteps, uploadBytes int64
	table                             quotasValue
}

// register adds --quota-running, --quota-queued-steps, --quota-upload-bytes
// and --quotas (AGENTBUS_QUOTA_RUNNING … AGENTBUS_QUOTAS through the usual
// env binding) and a PreRunE that reports a bad quota table.
func (f *quotaFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int64Var(&f.running, "quota-running", 0, "most workflows a tenant may have running (submitted and not ended) at once; "+
		"a submission past it gets 429 quota_exceeded with Retry-After (0: no quota)")
	fl.Int64Var(&f.queuedSteps, "quota-queued-steps", 0, "most steps a tenant may have queued or running at once; "+
		"a submission while it is reached gets 429 quota_exceeded (0: no quota)")
	fl.Int64Var(&f.uploadBytes, "quota-upload-bytes", 0, "most bytes of uploads a tenant may have waiting to be indexed; "+
		"an upload that would pass it gets 429 quota_exceeded (0: no quota)")
	fl.Var(&f.table, "quotas", `per-tenant quotas over the --quota-* defaults: a JSON file {"<tenant>": {"running", "queued_steps", "upload_bytes"}, …} `+
		`(a field left out takes the default, 0 is no quota); AGENTBUS_QUOTAS may hold the file's path or the JSON itself`)
	checkBeforeRun(cmd, f.check)
}

// check reports a quota table that could not be read or is invalid, and a
// negative default.
func (f *quotaFlags) check() error {
	if f.table.err != nil {
		return &exitError{code: exitUsage, msg: f.table.err.Error()}
	}
	if err := f.config().Validate(); err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	return nil
}

// config is the gateway's quota configuration.
func (f *quotaFlags) config() gateway.QuotaConfig {
	return gateway.QuotaConfig{
		Default: gateway.Limits{Running: f.running, QueuedSteps: f.queuedSteps, UploadBytes: f.uploadBytes},
		Tenants: f.table.tenants,
	}
}

// quotasValue is the value of --quotas: a path, or inline JSON (first
// non-space character '{'). Its error waits for check, as --tokens' does.
type quotasValue struct {
	spec    string
	tenants map[string]gateway.TenantLimits
	err     error
}

func (v *quotasValue) String() string { return v.spec }

// Type names the value in --help.
func (v *quotasValue) Type() string { return "FILE" }

func (v *quotasValue) Set(s string) error {
	*v = quotasValue{spec: s}
	trimmed := strings.TrimSpace(s)
	switch {
	case trimmed == "":
		return nil
	case trimmed[0] == '{':
		if v.tenants, v.err = gateway.ParseQuotas([]byte(trimmed)); v.err != nil {
			v.err = fmt.Errorf("--quotas (inline JSON, e.g. from AGENTBUS_QUOTAS): %w", v.err)
		}
		return nil
	}
	data, err := os.ReadFile(s)
	if err != nil {
		v.err = fmt.Errorf("--quotas: %w", err)
		return nil
	}
	if v.tenants, v.err = gateway.ParseQuotas(data); v.err != nil {
		v.err = fmt.Errorf("--quotas %s: %w", s, v.err)
	}
	return nil
}
