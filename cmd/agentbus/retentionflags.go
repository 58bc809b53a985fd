package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/retention"
)

// retentionFlags are the orchestrator's retention flags (serve,
// orchestrator): how long ended workflows are kept, for every tenant and
// per tenant, and how often the sweep runs.
type retentionFlags struct {
	completed, failed periodValue
	interval          time.Duration
	table             retentionTable
}

// register adds --retention-completed, --retention-failed, --retention
// and --retention-interval (AGENTBUS_RETENTION_COMPLETED … through the
// usual env binding) and a PreRunE that reports a bad table.
func (f *retentionFlags) register(cmd *cobra.Command) {
	f.completed.d, f.failed.d = retention.DefaultCompleted, retention.DefaultFailed
	fl := cmd.Flags()
	fl.Var(&f.completed, "retention-completed", "how long a completed workflow is kept after it ended, then purged with its events, "+
		`session turn and upload: a duration ("36h"), whole days ("7d") or "forever"`)
	fl.Var(&f.failed, "retention-failed", "how long a failed, canceled or rejected workflow is kept after it ended (as --retention-completed)")
	fl.Var(&f.table, "retention", `per-tenant retention over --retention-completed/--retention-failed: a JSON file {"<tenant>": {"completed": "1d", "failed": "90d"}, …} `+
		`(a field left out takes the default; "forever" never purges); AGENTBUS_RETENTION may hold the file's path or the JSON itself`)
	fl.DurationVar(&f.interval, "retention-interval", time.Minute, "how often the retention sweep runs (one orchestrator at a time sweeps); 0 turns it off")
	checkBeforeRun(cmd, f.check)
}

// check reports a retention table that could not be read or is invalid.
func (f *retentionFlags) check() error {
	if f.table.err != nil {
		return &exitError{code: exitUsage, msg: f.table.err.Error()}
	}
	if f.interval < 0 {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--retention-interval %s: must not be negative", f.interval)}
	}
	if err := f.policy().Validate(); err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	return nil
}

// policy is the orchestrator's retention policy.
func (f *retentionFlags) policy() retention.Policy {
	return retention.Policy{Completed: f.completed.d, Failed: f.failed.d, Tenants: f.table.tenants}
}

// sweepInterval is orchestrator.Config.RetentionInterval: negative for
// off.
func (f *retentionFlags) sweepInterval() time.Duration {
	if f.interval == 0 {
		return -1
	}
	return f.interval
}

// periodValue is a flag holding a retention period (retention.ParsePeriod).
type periodValue struct{ d time.Duration }

func (v *periodValue) String() string { return retention.FormatPeriod(v.d) }

// Type names the value in --help.
func (v *periodValue) Type() string { return "period" }

func (v *periodValue) Set(s string) error {
	d, err := retention.ParsePeriod(s)
	if err != nil {
		return err
	}
	v.d = d
	return nil
}

// retentionTable is the value of --retention: a path, or inline JSON
// (first non-space character '{'). Its error waits for check, as
// --quotas' does.
type retentionTable struct {
	spec    string
	tenants map[string]retention.Rule
	err     error
}

func (v *retentionTable) String() string { return v.spec }

// Type names the value in --help.
func (v *retentionTable) Type() string { return "FILE" }

func (v *retentionTable) Set(s string) error {
	*v = retentionTable{spec: s}
	trimmed := strings.TrimSpace(s)
	switch {
	case trimmed == "":
		return nil
	case trimmed[0] == '{':
		if v.tenants, v.err = retention.ParseTable([]byte(trimmed)); v.err != nil {
			v.err = fmt.Errorf("--retention (inline JSON, e.g. from AGENTBUS_RETENTION): %w", v.err)
		}
		return nil
	}
	data, err := os.ReadFile(s)
	if err != nil {
		v.err = fmt.Errorf("--retention: %w", err)
		return nil
	}
	if v.tenants, v.err = retention.ParseTable(data); v.err != nil {
		v.err = fmt.Errorf("--retention %s: %w", s, v.err)
	}
	return nil
}
