package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/api"
	sdk "github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

type clientFlags struct {
	url, tenant, token string
	json               bool
}

func (f *clientFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "url", "http://127.0.0.1:8080", "agentbus gateway URL")
	cmd.Flags().StringVar(&f.tenant, "tenant", api.DefaultTenant, "tenant id")
	cmd.Flags().BoolVar(&f.json, "json", false, "print each event as one JSON line")
	cmd.Flags().StringVar(&f.token, "token", "", "bearer token (when the gateway has auth on); also AGENTBUS_TOKEN")
}

func newAsk() *cobra.Command {
	var f clientFlags
	var planFile, session, idemKey string
	var plain, newSession bool
	cmd := &cobra.Command{
		Use:   "ask [flags] QUERY",
		Short: "Submit a workflow and print its events live until it ends",
		Long: "Submit a workflow and print its events live until it ends: on a terminal as a live view of\n" +
			"the plan's steps and the answer, else (or with --plain) one line per event.\n" +
			"Exit status: 0 completed, 1 failed, 2 canceled, 3 usage or connection error.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.SubmitRequest{}
			if len(args) == 1 {
				req.Query = args[0]
			}
			if planFile != "" {
				p, err := readPlan(planFile)
				if err != nil {
					return &exitError{code: exitUsage, msg: err.Error()}
				}
				req.Plan = p
			}
			if req.Query == "" && req.Plan == nil {
				return &exitError{code: exitUsage, msg: "give a QUERY or --plan FILE"}
			}
			id, err := sessionFlag(session, newSession)
			if err != nil {
				return err
			}
			req.SessionID = id
			if newSession {
				fmt.Fprintf(cmd.ErrOrStderr(), "session %s (continue it with: agentbus ask --session %s QUERY)\n", id, id)
			}
			var opts []sdk.SubmitOption
			if idemKey != "" {
				if err := api.ValidIdempotencyKey(idemKey); err != nil {
					return &exitError{code: exitUsage, msg: fmt.Sprintf("--idempotency-key: %q: want %s", idemKey, api.IdempotencyKeyRule)}
				}
				opts = append(opts, sdk.WithIdempotencyKey(idemKey))
			}
			c := newClientFor(f)
			out := cmd.OutOrStdout()
			sub, err := c.submit(cmd.Context(), req, opts...)
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			if sub.Replayed {
				fmt.Fprintf(cmd.ErrOrStderr(), "idempotency key %s was used within 24h for this same request: following its workflow %s\n", idemKey, sub.WorkflowID)
			}
			if _, live := liveTerminal(out, f, plain); !f.json && !live {
				fmt.Fprintf(out, "workflow %s (tenant %s)\n", sub.WorkflowID, sub.TenantID)
			}
			return followAndPrint(cmd, c, f, plain, sub.WorkflowID, 0)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&planFile, "plan", "", "JSON plan file: {\"steps\": [{\"id\", \"capability\", \"input\", \"depends_on\"}]}")
	cmd.Flags().StringVar(&session, "session", "", "continue (or start) this conversation session: earlier turns reach the agents and a follow-up "+
		"(\"and what about its read lock?\") is resolved against them; GET /v1/sessions/ID lists its turns")
	cmd.Flags().BoolVar(&newSession, "new-session", false, "start a new conversation session and print its id on stderr")
	cmd.Flags().StringVar(&idemKey, "idempotency-key", "", "submit at most once under this key: run again with the same key and request within 24h, "+
		"it follows the workflow the first run started instead of starting another (the same key with another request is refused, 409)")
	registerPlain(cmd, &plain)
	return cmd
}

// sessionFlag is the session id of --session or --new-session ("" for
// neither), or a usage error.
func sessionFlag(session string, fresh bool) (string, error) {
	switch {
	case session != "" && fresh:
		return "", &exitError{code: exitUsage, msg: "give --session ID or --new-session, not both"}
	case fresh:
		return newSessionID(), nil
	case session != "":
		if err := subjects.ValidSession(session); err != nil {
			return "", &exitError{code: exitUsage, msg: fmt.Sprintf("--session %q: want a session id matching %s", session, subjects.TokenPattern)}
		}
	}
	return session, nil
}

// newSessionID is a fresh session id: a time-ordered UUID, a valid token.
func newSessionID() string {
	if id, err := uuid.NewV7(); err == nil {
		return id.String()
	}
	return uuid.NewString()
}

// readPlan reads and validates a plan file, naming each bad field.
func readPlan(path string) (*events.Plan, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--plan: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("--plan %s: %w", path, err)
	}
	if err := schemas.Validate(schemas.Plan, b); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) {
			var sb strings.Builder
			fmt.Fprintf(&sb, "--plan %s is not a valid plan:", path)
			for _, p := range ve.Problems {
				fmt.Fprintf(&sb, "\n  %s: %s", p.Pointer, p.Message)
			}
			return nil, errors.New(sb.String())
		}
		return nil, err
	}
	var p events.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("--plan %s: %w", path, err)
	}
	return &p, nil
}

func newWatch() *cobra.Command {
	var f clientFlags
	var from uint64
	var plain bool
	cmd := &cobra.Command{
		Use:   "watch [flags] WORKFLOW_ID",
		Short: "Print a workflow's events after an offset and follow it to the end",
		Long: "Print a workflow's events after an offset (exclusive; 0 = from the first) and follow it to the end:\n" +
			"on a terminal as a live view of the plan's steps and the answer, else (or with --plain) one line per event.\n" +
			"Exit status: 0 completed, 1 failed, 2 canceled, 3 usage or connection error or an unknown workflow.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := newClientFor(f)
			c.notFoundGrace = 0 // an unknown id is reported at once
			return followAndPrint(cmd, c, f, plain, args[0], from)
		},
	}
	f.register(cmd)
	cmd.Flags().Uint64Var(&from, "from", 0, "print events after this offset")
	registerPlain(cmd, &plain)
	return cmd
}

// registerPlain adds --plain, which keeps a terminal to the line-per-event
// output that pipes and files get.
func registerPlain(cmd *cobra.Command, plain *bool) {
	cmd.Flags().BoolVar(plain, "plain", false, "one line per event even on a terminal (no live view)")
}

// followAndPrint shows frames until the terminal one — in the live view
// on a terminal, else one line each — and maps it to the exit status.
func followAndPrint(cmd *cobra.Command, c *client, f clientFlags, plain bool, workflow string, from uint64) error {
	out := cmd.OutOrStdout()
	var last events.Frame
	var err error
	if tty, live := liveTerminal(out, f, plain); live {
		last, err = followLive(cmd.Context(), c, tty, workflow, from)
	} else {
		last, err = c.follow(cmd.Context(), workflow, from, func(fr events.Frame) error {
			if f.json {
				b, _ := json.Marshal(fr)
				_, err := fmt.Fprintln(out, string(b))
				return err
			}
			_, err := fmt.Fprintln(out, formatFrame(fr))
			return err
		})
	}
	if errors.Is(err, sdk.ErrNotFound) {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("workflow %s: %v (tenant %s at %s)", workflow, err, c.tenant, c.base)}
	}
	if err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	switch last.Type {
	case events.TypeComplete.Short():
		return nil
	case events.TypeCancelled.Short():
		return &exitError{code: exitCanceled, msg: "workflow " + workflow + " was canceled"}
	default:
		return &exitError{code: exitFailed, msg: "workflow " + workflow + " failed"}
	}
}
