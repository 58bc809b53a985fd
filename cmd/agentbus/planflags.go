package main

import (
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
)

// planFlags configure how the orchestrator plans bare queries.
type planFlags struct {
	llmURL, llmModel string
	llmTimeout       time.Duration
	// stepLease is the step watchdog's lease; 0 means three times the
	// workers' AckWait (--ack-wait where the command has it).
	stepLease time.Duration
	// stepHold and submitBound are the reconciler's bounds
	// (orchestrator.Config.StepHold, SubmitBound); 0 means the default.
	stepHold, submitBound time.Duration
	// tenantWeights and flowControl are flow control's settings
	// (orchestrator.Config.TenantWeights, FlowControlOff).
	tenantWeights string
	flowControl   bool
	// plainCheckpoints stores checkpoints as plain JSON
	// (orchestrator.Config.PlainCheckpoints).
	plainCheckpoints bool
	flowWindow       float64
	// maxInFlight and rateLimit are per tenant/capability limits
	// (orchestrator.Config.Limits).
	maxInFlight, rateLimit string
	tokenLimit             string
	// tokens is the token table whose tenants' weights --tenant-weights
	// adds to (serve's --tokens, or the orchestrator's own).
	tokens *tokensValue
	// flags are the command's flags, to read --ack-wait from when the
	// command runs workers too (serve).
	flags *pflag.FlagSet
	// tracer, when set, records the orchestrator's spans (otel.go).
	tracer trace.TracerProvider
	// metrics, when set, counts the LLM's calls and the orchestrator's
	// workflows (metrics.go).
	metrics *appMetrics
	// retention is how long ended workflows are kept (retentionflags.go).
	retention retentionFlags
	// perms is the tool permissions table (permflags.go), which serve's
	// gateway and workers read too.
	perms permFlags
}

func (f *planFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.llmURL, "llm-url", "", "OpenAI-compatible API base URL (e.g. http://localhost:11434/v1) for the LLM planner and agents; key from "+llm.APIKeyEnv+"; unset: heuristics only")
	cmd.Flags().StringVar(&f.llmModel, "llm-model", "gpt-4o-mini", "model the LLM planner and agents ask")
	cmd.Flags().DurationVar(&f.llmTimeout, "llm-timeout", 15*time.Second, "bound on one LLM call; past it the planner or agent falls back to its heuristic, and says so")
	cmd.Flags().DurationVar(&f.stepLease, "step-lease", 0, "how long a dispatched step may show no sign of life (its request queued or running, or its reply stored) "+
		"before it is dispatched again as its next attempt (a step handed back to its worker with a verdict has that worker's --ack-wait instead; "+
		"the watchdog first looks at a workflow a third of this after its first dispatch), and how long a workflow may sit unchanged before the checkpoint scan looks at it; "+
		"at least the workers' --ack-wait (default three times it: 1m30s)")
	cmd.Flags().DurationVar(&f.stepHold, "step-hold", orchestrator.DefaultStepHold, "how long a step's request may stay held by its consumer "+
		"(delivered, never acknowledged nor redelivered) after the watchdog stepped the consumer's leader down, before the attempt is given up and the step "+
		"dispatched again as a new, fenced attempt; must exceed the longest a live step can run (the workers' step timeout times their max deliveries)")
	cmd.Flags().DurationVar(&f.submitBound, "submit-bound", orchestrator.DefaultSubmitBound, "how old an accepted submission still stored with no "+
		"checkpoint may be before the reconciler starts it from the stream")
	cmd.Flags().StringVar(&f.tenantWeights, "tenant-weights", "", "tenants' shares of a busy capability, e.g. acme=3,beta=1 "+
		"(a tenant not named has weight 1); flow control admits waiting steps in proportion to them")
	cmd.Flags().BoolVar(&f.flowControl, "flow-control", true, "share a busy capability fairly among tenants (and by priority within one): "+
		"steps wait in AGENTBUS_QUEUE for a fair turn instead of queueing behind every earlier step; false dispatches every step at once")
	cmd.Flags().BoolVar(&f.plainCheckpoints, "plain-checkpoints", false, "store checkpoints as plain JSON (readable with nats kv get) "+
		"instead of zstd-compressed against the dictionary agentbus ships: about six times the bytes; readers take either; chosen anyway when the servers S2-compress the bucket (--compress-streams), which compresses plain revisions better")
	cmd.Flags().Float64Var(&f.flowWindow, "flow-window", 1, "step requests that may wait for a busy capability's workers, per worker slot, "+
		"before new ones wait for admission: smaller is fairer to a tenant behind another's backlog, larger parks less work (cheaper)")
	cmd.Flags().StringVar(&f.maxInFlight, "max-in-flight", "", "bound a tenant's steps of a capability waiting for or held by a worker at once, "+
		"e.g. acme/search=4,beta/*=2 (* is every capability without its own); a step over it waits in its queue")
	cmd.Flags().StringVar(&f.rateLimit, "rate-limit", "", "bound a tenant's steps of a capability admitted a second, e.g. acme/search=10,beta/*=2.5; "+
		"a step over it waits in its queue with a progress event saying until when")
	cmd.Flags().StringVar(&f.tokenLimit, "token-limit", "", "bound the tokens a tenant's steps spend on a model a minute, e.g. "+
		"acme/gpt-4o-mini=60000,beta/*=20000 (* is every model without its own; TOKENS:BURST sets the bucket's size, default a minute's worth); "+
		"agents report what they spend by model, and a step of a capability that spends on a model waits in its queue while its tenant's bucket is empty")
	f.retention.register(cmd)
	f.perms.register(cmd)
	f.flags = cmd.Flags()
	// Checked before the command connects or starts anything.
	checkBeforeRun(cmd, func() error {
		if _, err := f.lease(); err != nil {
			return err
		}
		if _, err := f.weights(); err != nil {
			return err
		}
		if _, err := f.limits(); err != nil {
			return err
		}
		if _, err := f.tokenLimits(); err != nil {
			return err
		}
		if f.flowWindow <= 0 || f.flowWindow > 64 {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("--flow-window %g: must be above 0 and at most 64 requests a worker slot", f.flowWindow)}
		}
		if f.stepHold <= 0 || f.submitBound <= 0 {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("--step-hold %s and --submit-bound %s: must be positive", f.stepHold, f.submitBound)}
		}
		return nil
	})
}

// lease returns the step lease these flags set, or an error naming the
// flag. Its floor is the workers' AckWait: --ack-wait where the command
// runs workers (serve), else the workers' default, since a lease shorter
// than the time JetStream takes to hand a dead worker's step to another
// only checks more often without learning more.
func (f *planFlags) lease() (time.Duration, error) {
	ackWait, from := defaultWorkerFlags().ackWait, "the workers' default --ack-wait"
	if f.flags != nil && f.flags.Lookup("ack-wait") != nil {
		if d, err := f.flags.GetDuration("ack-wait"); err == nil {
			ackWait, from = d, "--ack-wait"
		}
	}
	switch {
	case f.stepLease == 0:
		return 3 * ackWait, nil
	case f.stepLease < 0:
		return 0, &exitError{code: exitUsage, msg: fmt.Sprintf("--step-lease (AGENTBUS_STEP_LEASE) %s: must be positive", f.stepLease)}
	case f.stepLease < ackWait:
		return 0, &exitError{code: exitUsage, msg: fmt.Sprintf(
			"--step-lease (AGENTBUS_STEP_LEASE) %s is below %s %s: the lease must be at least the workers' AckWait",
			f.stepLease, from, ackWait)}
	}
	return f.stepLease, nil
}

// chat is the LLM these flags name, nil without --llm-url.
func (f *planFlags) chat() (*llm.Chat, error) {
	if f.llmURL == "" {
		return nil, nil
	}
	chat, err := llm.NewChat(llm.ChatConfig{URL: f.llmURL, Model: f.llmModel, APIKey: os.Getenv(llm.APIKeyEnv), Timeout: f.llmTimeout,
		Observe: f.metrics.observeLLM()})
	if err != nil {
		return nil, &exitError{code: exitUsage, msg: "--llm-url: " + err.Error()}
	}
	return chat, nil
}

// config builds the orchestrator configuration these flags describe.
func (f *planFlags) config(b *bus.Bus, log *slog.Logger) (orchestrator.Config, error) {
	lease, err := f.lease()
	if err != nil {
		return orchestrator.Config{}, err
	}
	weights, err := f.weights()
	if err != nil {
		return orchestrator.Config{}, err
	}
	limits, err := f.limits()
	if err != nil {
		return orchestrator.Config{}, err
	}
	tokenLimits, err := f.tokenLimits()
	if err != nil {
		return orchestrator.Config{}, err
	}
	cfg := orchestrator.Config{TokenLimits: tokenLimits, Bus: b, Logger: log, StepLease: lease, StepHold: f.stepHold, SubmitBound: f.submitBound,
		Metrics: f.metrics.orchestratorMetrics(), TenantWeights: weights, FlowControlOff: !f.flowControl, Limits: limits, FlowWindow: f.flowWindow,
		Retention: f.retention.policy(), RetentionInterval: f.retention.sweepInterval(), Permissions: f.perms.table(),
		PlainCheckpoints: f.plainCheckpoints}
	cfg.TracerProvider = f.tracer
	if f.llmURL == "" {
		log.Info("planner: heuristic (no --llm-url)")
		return cfg, nil
	}
	chat, err := f.chat()
	if err != nil {
		return cfg, err
	}
	cfg.Planner = &orchestrator.LLMPlanner{Chat: chat}
	log.Info("planner: LLM with heuristic fallback", "llm", chat.Name())
	// Sessions: the model rewrites follow-ups and writes the rolling
	// summary; either falls back to the deterministic way when it fails.
	cfg.Rewriter = chat
	if cfg.Sessions, err = sessions.New(sessions.Config{Bus: b, Logger: log, Summarizer: orchestrator.LLMSummarizer{Chat: chat}}); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// weights are the tenants' weights: the token table's ("weight" in a
// tenant's tokens), each overridden by --tenant-weights.
func (f *planFlags) weights() (map[string]int, error) {
	flagged, err := parseWeights(f.tenantWeights)
	if err != nil {
		return nil, err
	}
	if f.tokens == nil || f.tokens.err != nil {
		return flagged, nil
	}
	out := gateway.TenantWeights(f.tokens.tokens)
	if out == nil {
		return flagged, nil
	}
	maps.Copy(out, flagged)
	return out, nil
}

// registerTokens adds --tokens to a command that reads the token table
// only for the tenants' weights (orchestrator).
func (f *planFlags) registerTokens(cmd *cobra.Command) {
	f.tokens = &tokensValue{}
	cmd.Flags().Var(f.tokens, "tokens", `the gateway's token table (a JSON file, or the JSON itself through AGENTBUS_TOKENS): `+
		`the orchestrator reads the tenants' weights ("weight") from it; --tenant-weights overrides them`)
	checkBeforeRun(cmd, func() error {
		if f.tokens.err != nil {
			return &exitError{code: exitUsage, msg: f.tokens.err.Error()}
		}
		return nil
	})
}

// maxWeight bounds a tenant's weight: beyond it a share is all but the
// whole capability, which no weight needs to say.
const maxWeight = 1000

// parseWeights reads --tenant-weights: "tenant=weight" pairs separated by
// commas, each tenant a valid tenant id and each weight 1–1000.
func parseWeights(s string) (map[string]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]int{}
	for _, pair := range strings.Split(s, ",") {
		tenant, w, ok := strings.Cut(strings.TrimSpace(pair), "=")
		n, err := strconv.Atoi(w)
		switch {
		case !ok:
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--tenant-weights: %q is not tenant=weight", pair)}
		case subjects.ValidTenant(tenant) != nil:
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--tenant-weights: %q: %v", pair, subjects.ValidTenant(tenant))}
		case err != nil || n < 1 || n > maxWeight:
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--tenant-weights: %q: the weight must be a whole number from 1 to %d", pair, maxWeight)}
		case out[tenant] != 0:
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--tenant-weights: tenant %q is named twice", tenant)}
		}
		out[tenant] = n
	}
	return out, nil
}

// limits reads --max-in-flight and --rate-limit: "tenant/capability=value"
// pairs separated by commas (capability * for every one without its own).
func (f *planFlags) limits() (map[string]orchestrator.Limit, error) {
	out := map[string]orchestrator.Limit{}
	for _, fl := range []struct {
		name, value string
		set         func(l *orchestrator.Limit, v float64) error
	}{
		{"--max-in-flight", f.maxInFlight, func(l *orchestrator.Limit, v float64) error {
			if v != math.Trunc(v) || v < 1 {
				return fmt.Errorf("must be a whole number of steps, at least 1")
			}
			l.MaxInFlight = int(v)
			return nil
		}},
		{"--rate-limit", f.rateLimit, func(l *orchestrator.Limit, v float64) error {
			if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return fmt.Errorf("must be a positive number of steps a second")
			}
			l.PerSecond = v
			return nil
		}},
	} {
		if strings.TrimSpace(fl.value) == "" {
			continue
		}
		for _, pair := range strings.Split(fl.value, ",") {
			key, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
			tenant, capability, ok2 := strings.Cut(key, "/")
			v, err := strconv.ParseFloat(val, 64)
			switch {
			case !ok || !ok2:
				return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("%s: %q is not tenant/capability=value", fl.name, pair)}
			case subjects.ValidTenant(tenant) != nil:
				return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("%s: %q: %v", fl.name, pair, subjects.ValidTenant(tenant))}
			case capability != "*" && subjects.ValidCapability(capability) != nil:
				return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("%s: %q: %v", fl.name, pair, subjects.ValidCapability(capability))}
			case err != nil:
				return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("%s: %q: %q is not a number", fl.name, pair, val)}
			}
			k := orchestrator.LimitKey(tenant, capability)
			l := out[k]
			if err := fl.set(&l, v); err != nil {
				return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("%s: %q: %v", fl.name, pair, err)}
			}
			out[k] = l
		}
	}
	if len(out) > 0 && !f.flowControl {
		return nil, &exitError{code: exitUsage, msg: "--max-in-flight and --rate-limit need --flow-control"}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// tokenLimits reads --token-limit: "tenant/model=tokens[:burst]" pairs
// separated by commas (model * for every model without its own; a model
// name may itself hold a slash: the tenant ends at the first).
func (f *planFlags) tokenLimits() (map[string]orchestrator.TokenLimit, error) {
	if strings.TrimSpace(f.tokenLimit) == "" {
		return nil, nil
	}
	bad := func(pair, why string) error {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--token-limit: %q: %s", pair, why)}
	}
	number := func(s string) (float64, bool) {
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil && v > 0 && !math.IsInf(v, 0)
	}
	out := map[string]orchestrator.TokenLimit{}
	for _, pair := range strings.Split(f.tokenLimit, ",") {
		pair = strings.TrimSpace(pair)
		key, val, ok := strings.Cut(pair, "=")
		tenant, model, ok2 := strings.Cut(key, "/")
		if !ok || !ok2 || model == "" {
			return nil, bad(pair, "is not tenant/model=tokens")
		}
		if err := subjects.ValidTenant(tenant); err != nil {
			return nil, bad(pair, err.Error())
		}
		perMinute, burst, hasBurst := strings.Cut(val, ":")
		var l orchestrator.TokenLimit
		if l.PerMinute, ok = number(perMinute); !ok {
			return nil, bad(pair, fmt.Sprintf("%q is not a positive number of tokens a minute", perMinute))
		}
		if hasBurst {
			if l.Burst, ok = number(burst); !ok {
				return nil, bad(pair, fmt.Sprintf("burst %q is not a positive number of tokens", burst))
			}
		}
		k := orchestrator.TokenLimitKey(tenant, model)
		if _, dup := out[k]; dup {
			return nil, bad(pair, "names "+k+" twice")
		}
		out[k] = l
	}
	if !f.flowControl {
		return nil, &exitError{code: exitUsage, msg: "--token-limit needs --flow-control"}
	}
	return out, nil
}
