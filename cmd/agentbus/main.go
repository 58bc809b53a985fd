package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbus/agentbus/events"
)

// exitError carries a process exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// Exit codes of the client commands.
const (
	exitCompleted = 0
	exitFailed    = 1
	exitCanceled  = 2
	exitUsage     = 3
)

func main() {
	// The first SIGINT or SIGTERM starts a clean shutdown (exit status 0
	// when it completes); a second one ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the CLI with args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitCompleted
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(root.ErrOrStderr(), "agentbus:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(root.ErrOrStderr(), "agentbus:", err)
	return exitUsage
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "agentbus",
		Short:         "Multi-agent AI pipelines on NATS JetStream",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return bindEnv(cmd)
		},
	}
	root.Version = currentVersion().String()
	root.SetVersionTemplate("{{.Version}}")
	root.AddCommand(newVersion(), newServe(), newWorker(), newOrchestrator(), newGateway(), newAsk(), newWatch(), newAgents(), newIndex(), newEval(),
		newControl(events.ActionCancel, "Cancel a workflow: nothing more is dispatched and running steps are stopped"),
		newControl(events.ActionResume, "Resume a failed workflow: failed steps run again, completed ones are kept"),
		newControl(events.ActionApprove, "Approve (or --reject) a step that awaits a human decision"),
		newControl(events.ActionPause, "Pause a workflow: running steps finish, nothing new is dispatched until unpause"),
		newControl(events.ActionUnpause, "Unpause a paused workflow: what is ready is dispatched"),
		newSignal())
	root.AddCommand(newNatsConfig(), newSession(), newBench(), newMCP())
	root.AddCommand(newList(), newHistory(), newFork(), newDelete(), newDocuments(), newSchedule())
	return root
}

// bindEnv sets every flag not given on the command line from
// AGENTBUS_<NAME>, and reports a bad value with the variable's name.
func bindEnv(cmd *cobra.Command) error {
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed {
			return
		}
		name := "AGENTBUS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
		}
	})
	return errors.Join(errs...)
}
