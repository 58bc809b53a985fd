package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
)

// newSchedule is "agentbus schedule": schedules on a gateway.
func newSchedule() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Create, list, pause, trigger, backfill and delete schedules: workflows started on a cron expression or an interval",
		Long: "Schedules start a workflow template at every slot of a cron expression (in a time zone) or an\n" +
			"interval, fired by JetStream message schedules: once per slot however many orchestrators run.\n" +
			"Each run's workflow id is <schedule>-<slot unix seconds> and its metadata.schedule_id names the\n" +
			"schedule (agentbus list --schedule ID).",
	}
	cmd.AddCommand(newScheduleCreate(), newScheduleList(), newScheduleGet(), newSchedulePause(true), newSchedulePause(false),
		newScheduleDelete(), newScheduleTrigger(), newScheduleBackfill())
	return cmd
}

// scheduleCall sends a request to the gateway, wants status want, and
// decodes the answer into out (nil: none).
func scheduleCall(ctx context.Context, c *client, method, path string, body any, want int, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	resp, err := c.do(ctx, method, path, b)
	if err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return &exitError{code: exitUsage, msg: apiErr(resp).Error()}
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return &exitError{code: exitUsage, msg: "reading the answer of " + path + ": " + err.Error()}
	}
	return nil
}

// printSchedules prints schedules a line each.
func printSchedules(w io.Writer, ss []gateway.ScheduleResponse) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintln(tw, "SCHEDULE\tWHEN\tOVERLAP\tSTATE\tNEXT FIRE\tSTARTED\tSKIPPED\tLAST RUN")
	for _, s := range ss {
		when := s.Cron
		if s.Every != "" {
			when = "every " + s.Every
		}
		if s.TimeZone != "" {
			when += " (" + s.TimeZone + ")"
		}
		if s.Jitter != "" {
			when += " ±" + s.Jitter
		}
		state, next := "active", "-"
		if s.Paused {
			state = "paused"
		}
		if s.NextFireAt != nil {
			next = s.NextFireAt.Local().Format(time.DateTime)
		}
		last := s.State.LastWorkflowID
		if last == "" {
			last = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.ScheduleID, when, s.Overlap, state, next, s.State.Started, s.State.Skipped, last)
	}
}

func newScheduleCreate() *cobra.Command {
	var f clientFlags
	var body struct {
		ScheduleID string `json:"schedule_id"`
		Cron       string `json:"cron,omitempty"`
		Every      string `json:"every,omitempty"`
		TimeZone   string `json:"time_zone,omitempty"`
		Jitter     string `json:"jitter,omitempty"`
		Catchup    string `json:"catchup_window,omitempty"`
		Overlap    string `json:"overlap,omitempty"`
		Paused     bool   `json:"paused,omitempty"`
		Note       string `json:"note,omitempty"`
		Workflow   struct {
			Query     string            `json:"query,omitempty"`
			Plan      *events.Plan      `json:"plan,omitempty"`
			Metadata  map[string]string `json:"metadata,omitempty"`
			TimeoutMS int64             `json:"timeout_ms,omitempty"`
		} `json:"workflow"`
	}
	var planFile string
	var metadata []string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "create ID (--cron EXPR | --every DURATION) (--query TEXT | --plan FILE)",
		Short: "Create a schedule",
		Example: "  agentbus schedule create digest --cron '0 8 * * mon-fri' --time-zone Europe/Paris --query 'summarise the news'\n" +
			"  agentbus schedule create poll --every 30s --overlap buffer_one --plan plan.json",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body.ScheduleID = args[0]
			if planFile != "" {
				b, err := os.ReadFile(planFile)
				if err != nil {
					return &exitError{code: exitUsage, msg: err.Error()}
				}
				body.Workflow.Plan = new(events.Plan)
				if err := json.Unmarshal(b, body.Workflow.Plan); err != nil {
					return &exitError{code: exitUsage, msg: planFile + ": " + err.Error()}
				}
			}
			for _, kv := range metadata {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return &exitError{code: exitUsage, msg: fmt.Sprintf("--metadata %q: want key=value", kv)}
				}
				if body.Workflow.Metadata == nil {
					body.Workflow.Metadata = map[string]string{}
				}
				body.Workflow.Metadata[k] = v
			}
			body.Workflow.TimeoutMS = timeout.Milliseconds()
			var out gateway.ScheduleResponse
			if err := scheduleCall(cmd.Context(), newClientFor(f), http.MethodPost, "/v1/schedules", body, http.StatusCreated, &out); err != nil {
				return err
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			printSchedules(cmd.OutOrStdout(), []gateway.ScheduleResponse{out})
			return nil
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&body.Cron, "cron", "", "cron expression: 5 fields (minute first), 6 (seconds first), or @hourly/@daily/@weekly/@monthly/@yearly")
	fl.StringVar(&body.Every, "every", "", "interval instead of cron (30s, 5m, 1h)")
	fl.StringVar(&body.TimeZone, "time-zone", "", "IANA time zone of the cron expression (default UTC)")
	fl.StringVar(&body.Jitter, "jitter", "", "start each run up to this long after its slot")
	fl.StringVar(&body.Catchup, "catchup-window", "", "start slots no server fired (all down past them) up to this far back when it fires again (default: skip them)")
	fl.StringVar(&body.Overlap, "overlap", "", "while the previous run has not ended: skip (default), buffer_one, cancel_previous or allow_all")
	fl.BoolVar(&body.Paused, "paused", false, "create it paused")
	fl.StringVar(&body.Note, "note", "", "a note")
	fl.StringVar(&body.Workflow.Query, "query", "", "the workflow's query")
	fl.StringVar(&planFile, "plan", "", "a JSON file with the workflow's plan")
	fl.StringArrayVar(&metadata, "metadata", nil, "workflow metadata key=value (repeatable)")
	fl.DurationVar(&timeout, "timeout", 0, "bound on each run")
	return cmd
}

func newScheduleList() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tenant's schedules with their next fire and counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out struct {
				Schedules []gateway.ScheduleResponse `json:"schedules"`
			}
			if err := scheduleCall(cmd.Context(), newClientFor(f), http.MethodGet, "/v1/schedules", nil, http.StatusOK, &out); err != nil {
				return err
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			printSchedules(cmd.OutOrStdout(), out.Schedules)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// newScheduleOne is a command on one schedule that answers it.
func newScheduleOne(use, short, method, suffix string) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out gateway.ScheduleResponse
			path := "/v1/schedules/" + url.PathEscape(args[0]) + suffix
			if err := scheduleCall(cmd.Context(), newClientFor(f), method, path, nil, http.StatusOK, &out); err != nil {
				return err
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			printSchedules(cmd.OutOrStdout(), []gateway.ScheduleResponse{out})
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newScheduleGet() *cobra.Command {
	return newScheduleOne("get", "Show a schedule: its definition, next fire and what its fires did", http.MethodGet, "")
}

func newSchedulePause(pause bool) *cobra.Command {
	if pause {
		return newScheduleOne("pause", "Pause a schedule: it fires nothing until unpaused", http.MethodPost, "/pause")
	}
	return newScheduleOne("unpause", "Unpause a schedule: it fires again from its next slot", http.MethodPost, "/unpause")
}

func newScheduleDelete() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a schedule (its runs are left alone)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/v1/schedules/" + url.PathEscape(args[0])
			if err := scheduleCall(cmd.Context(), newClientFor(f), http.MethodDelete, path, nil, http.StatusNoContent, nil); err != nil {
				return err
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), map[string]any{"schedule_id": args[0], "deleted": true})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schedule %s deleted\n", args[0])
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newScheduleTrigger() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "trigger ID",
		Short: "Fire a schedule now (paused or not), under its overlap policy",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out gateway.TriggerResponse
			path := "/v1/schedules/" + url.PathEscape(args[0]) + "/trigger"
			if err := scheduleCall(cmd.Context(), newClientFor(f), http.MethodPost, path, nil, http.StatusAccepted, &out); err != nil {
				return err
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schedule %s fired: workflow %s (agentbus watch %s)\n", out.ScheduleID, out.WorkflowID, out.WorkflowID)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newScheduleBackfill() *cobra.Command {
	var f clientFlags
	var from, to, overlap string
	cmd := &cobra.Command{
		Use:     "backfill ID --from TIME --to TIME",
		Short:   "Fire a schedule once for each of its slots in a past range (at most 1000)",
		Example: "  agentbus schedule backfill digest --from 2026-01-01T00:00:00Z --to 2026-01-07T23:59:59Z --overlap allow_all",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]string{"from": from, "to": to}
			if overlap != "" {
				body["overlap"] = overlap
			}
			var out gateway.BackfillResponse
			path := "/v1/schedules/" + url.PathEscape(args[0]) + "/backfill"
			if err := scheduleCall(cmd.Context(), newClientFor(f), http.MethodPost, path, body, http.StatusAccepted, &out); err != nil {
				return err
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schedule %s: %d slots fired\n", out.ScheduleID, len(out.WorkflowIDs))
			for _, id := range out.WorkflowIDs {
				fmt.Fprintln(cmd.OutOrStdout(), id)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&from, "from", "", "the range's start, RFC 3339 (inclusive)")
	cmd.Flags().StringVar(&to, "to", "", "the range's end, RFC 3339 (inclusive, not in the future)")
	cmd.Flags().StringVar(&overlap, "overlap", "", "overlap policy of the backfill's runs (default the schedule's)")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}
