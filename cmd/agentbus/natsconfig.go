package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"

	"github.com/agentbus/agentbus/internal/natsauth"
	"github.com/agentbus/agentbus/subjects"
)

// natsConfigFlags are the flags of `agentbus nats-config`.
type natsConfigFlags struct {
	tokens      tokensValue
	credentials string
	out         string
	workers     []string
	cost        int
}

func newNatsConfig() *cobra.Command {
	var f natsConfigFlags
	cmd := &cobra.Command{
		Use:   "nats-config",
		Short: "Render the NATS accounts and users that isolate tenants, from the gateway's token table",
		Long: `Render the accounts block of nats.conf that enforces tenant isolation in NATS (include it from
nats.conf). Every tenant named in the token table (--tokens, the gateway's) gets an account of its
own, TENANT_<tenant>, that reaches only its own subjects in account AGENTBUS, with two users:
<tenant>.client (submit, control, follow its own events) and <tenant>.worker (serve its own steps of
the capabilities given with --worker-capability, reply, publish progress). agentbus's roles connect
to AGENTBUS as agentbus-orchestrator, agentbus-worker and agentbus-gateway; sys is the operator's
system-account user.

Passwords are kept in the --credentials file (JSON, user → password, mode 0600): a user it lacks
gets a new random password, a user it has keeps its password, a user no longer needed is dropped.
The configuration holds only bcrypt hashes. Passwords are never derived from the tokens.
Users connect with nats://<user>:<password>@host:4222; a tenant's JetStream API is under
` + natsauth.APIPrefix + ` (nats.go: jetstream.NewWithAPIPrefix; nats CLI: --js-api-prefix).`,
		Example: `  agentbus nats-config --tokens tokens.json --credentials nats-credentials.json \
    --worker-capability acme=translate,ocr --out nats-accounts.conf`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	fl.Var(&f.tokens, "tokens", `the gateway's token table (a JSON file, or the JSON itself through AGENTBUS_TOKENS): its tenants get NATS accounts (required)`)
	fl.StringVar(&f.credentials, "credentials", "", "JSON file of user → password, created (mode 0600) or updated: existing passwords are kept (required)")
	fl.StringVar(&f.out, "out", "", "write the configuration to this file (mode 0600) instead of stdout")
	fl.StringArrayVar(&f.workers, "worker-capability", nil,
		"TENANT=CAP[,CAP…]: capabilities the tenant's own worker user serves, through consumer <tenant>-STEP-<cap> on AGENTBUS_STEPS; repeatable")
	fl.IntVar(&f.cost, "bcrypt-cost", bcrypt.DefaultCost, "bcrypt cost of the password hashes; the server pays it once per connection")
	return cmd
}

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

func (f *natsConfigFlags) run(cmd *cobra.Command) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	model, err := natsauth.NewModel(cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	creds, err := natsauth.LoadCredentials(f.credentials)
	if err != nil {
		return usageErr("--credentials %s: %v", f.credentials, err)
	}
	added, dropped, err := creds.Sync(model.Users())
	if err != nil {
		return err
	}
	var conf bytes.Buffer
	if err := model.Render(&conf, creds, natsauth.RenderOptions{Cost: f.cost, Source: f.tokens.String()}); err != nil {
		return usageErr("%v", err)
	}
	// Passwords first: a configuration whose passwords were lost would lock
	// everyone out, while saved passwords are simply used by the next run.
	if err := creds.Save(f.credentials); err != nil {
		return usageErr("--credentials %s: %v", f.credentials, err)
	}
	if f.out == "" || f.out == "-" {
		if _, err := cmd.OutOrStdout().Write(conf.Bytes()); err != nil {
			return err
		}
	} else if err := writeFile(f.out, conf.Bytes()); err != nil {
		return usageErr("--out %s: %v", f.out, err)
	}
	f.summary(cmd, cfg, model, added, dropped)
	return nil
}

// config reads the tenants from the token table and the capabilities of
// their workers from --worker-capability, naming the flag of any problem.
func (f *natsConfigFlags) config() (natsauth.Config, error) {
	if f.tokens.err != nil {
		return natsauth.Config{}, usageErr("%v", f.tokens.err)
	}
	if len(f.tokens.tokens) == 0 {
		return natsauth.Config{}, usageErr("--tokens is required: the gateway's token table, whose tenants get NATS accounts")
	}
	if f.credentials == "" {
		return natsauth.Config{}, usageErr("--credentials is required: the JSON file that keeps the users' passwords (created if missing)")
	}
	if f.cost < bcrypt.MinCost || f.cost > bcrypt.MaxCost {
		return natsauth.Config{}, usageErr("--bcrypt-cost %d: want %d to %d", f.cost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	caps := map[string][]string{}
	for _, t := range f.tokens.tokens {
		caps[t.Tenant] = nil
	}
	for _, w := range f.workers {
		tenant, list, ok := strings.Cut(w, "=")
		if !ok || list == "" {
			return natsauth.Config{}, usageErr("--worker-capability %q: want TENANT=CAP[,CAP…]", w)
		}
		if _, known := caps[tenant]; !known {
			return natsauth.Config{}, usageErr("--worker-capability %q: tenant %q is not in --tokens %s", w, tenant, f.tokens.String())
		}
		for _, c := range strings.Split(list, ",") {
			if err := subjects.ValidCapability(c); err != nil {
				return natsauth.Config{}, usageErr("--worker-capability %q: %v", w, err)
			}
			if !slices.Contains(caps[tenant], c) {
				caps[tenant] = append(caps[tenant], c)
			}
		}
	}
	var cfg natsauth.Config
	for _, id := range slices.Sorted(maps.Keys(caps)) {
		cfg.Tenants = append(cfg.Tenants, natsauth.Tenant{ID: id, Capabilities: caps[id]})
	}
	return cfg, nil
}

// writeFile replaces path with data, readable by its owner only: the
// configuration holds password hashes.
func writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// summary tells the operator on stderr what was rendered, without a
// password or a token.
func (f *natsConfigFlags) summary(cmd *cobra.Command, cfg natsauth.Config, m *natsauth.Model, added, dropped []string) {
	w := cmd.ErrOrStderr()
	var ids []string
	for _, t := range cfg.Tenants {
		ids = append(ids, t.ID)
	}
	fmt.Fprintf(w, "agentbus: nats-config: %d tenant(s) (%s), %d users: %s\n", len(ids), strings.Join(ids, ", "),
		len(m.Users()), strings.Join(m.Users(), ", "))
	if len(added) > 0 {
		fmt.Fprintf(w, "agentbus: new passwords for %s\n", strings.Join(added, ", "))
	}
	if len(dropped) > 0 {
		fmt.Fprintf(w, "agentbus: dropped the passwords of %s (no longer in the configuration)\n", strings.Join(dropped, ", "))
	}
	for _, t := range cfg.Tenants {
		if len(t.Capabilities) == 0 {
			fmt.Fprintf(w, "agentbus: %s pulls no steps (no --worker-capability %s=…)\n", natsauth.WorkerUser(t.ID), t.ID)
		}
	}
	where := "stdout"
	if f.out != "" && f.out != "-" {
		where = f.out
	}
	fmt.Fprintf(w, "agentbus: passwords in %s; configuration on %s: include it from nats.conf and reload the server\n", f.credentials, where)
}
