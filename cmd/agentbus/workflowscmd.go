package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// The workflow commands mirror the gateway's workflow endpoints: list
// (GET /v1/workflows), history (GET …/{id}/checkpoints), fork (POST
// …/{id}/fork) and delete (DELETE …/{id}). Each prints a table for people
// by default and the gateway's JSON answer with --json. Exit status: 0
// done, 1 refused by the workflow's state (delete of one not ended), 3
// usage or connection error or an unknown workflow.

// workflowSummary is one workflow of GET /v1/workflows.
type workflowSummary struct {
	WorkflowID  string          `json:"workflow_id"`
	Status      events.State    `json:"status"`
	Query       string          `json:"query,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	ResumeCount int             `json:"resume_count"`
	Error       json.RawMessage `json:"error,omitempty"`
	User        string          `json:"user,omitempty"`
}

// workflowPage is the answer of GET /v1/workflows.
type workflowPage struct {
	Workflows []workflowSummary `json:"workflows"`
	Next      string            `json:"next,omitempty"`
}

func newList() *cobra.Command {
	var f clientFlags
	var status, after, schedule string
	var limit int
	var all bool
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "List the tenant's workflows (the ones your token sees), oldest id first, a page at a time",
		Long: "List the tenant's workflows that the token sees, in workflow id order (ids the gateway made are\n" +
			"time-ordered), --limit to a page; --after continues after the last id of a page, --all reads\n" +
			"every page. --status keeps one state: submitted, working, input-required, completed, failed,\n" +
			"canceled or rejected.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := newClientFor(f)
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if status != "" {
				q.Set("status", status)
			}
			if after != "" {
				q.Set("after", after)
			}
			if schedule != "" {
				q.Set("schedule_id", schedule)
			}
			path := "/v1/workflows?" + q.Encode()
			var rows []workflowSummary
			next := ""
			for {
				var page workflowPage
				if err := getAnswer(cmd.Context(), c, path, &page); err != nil {
					return err
				}
				rows = append(rows, page.Workflows...)
				next = page.Next
				if !all || next == "" {
					break
				}
				path = next
			}
			w := cmd.OutOrStdout()
			if f.json {
				return printJSON(w, workflowPage{Workflows: rows, Next: next})
			}
			printWorkflows(w, rows)
			if next != "" {
				if u, err := url.Parse(next); err == nil {
					fmt.Fprintf(w, "more: agentbus list --after %s (or --all)\n", u.Query().Get("after"))
				}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&status, "status", "", "only workflows in this state")
	cmd.Flags().StringVar(&schedule, "schedule", "", "only the runs of this schedule (metadata.schedule_id)")
	cmd.Flags().IntVar(&limit, "limit", 50, "workflows a page (1 to 1000)")
	cmd.Flags().StringVar(&after, "after", "", "start after this workflow id (the last of the previous page)")
	cmd.Flags().BoolVar(&all, "all", false, "read every page")
	return cmd
}

// printWorkflows writes workflows as a table.
func printWorkflows(w io.Writer, rows []workflowSummary) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no workflows")
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintln(tw, "WORKFLOW\tSTATUS\tCREATED\tUPDATED\tUSER\tQUERY")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.WorkflowID, r.Status, stamp(r.CreatedAt), stamp(r.UpdatedAt), dash(r.User), cell(r.Query, 60))
	}
}

func newHistory() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "history [flags] WORKFLOW_ID",
		Short: "List a workflow's kept checkpoint revisions, oldest first (fork from one with agentbus fork)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := workflowArg(args[0])
			if err != nil {
				return err
			}
			var out struct {
				WorkflowID string         `json:"workflow_id"`
				Revisions  []api.Revision `json:"revisions"`
			}
			if err := getAnswer(cmd.Context(), newClientFor(f), "/v1/workflows/"+id+"/checkpoints", &out); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if f.json {
				return printJSON(w, out)
			}
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			defer tw.Flush()
			fmt.Fprintln(tw, "REVISION\tCHECKPOINT\tSTATUS\tPHASE\tSTEPS DONE\tUPDATED")
			for _, r := range out.Revisions {
				cp, err := r.State()
				if err != nil {
					fmt.Fprintf(tw, "%d\t%s\t?\t?\t?\t?\n", r.Revision, r.Status)
					continue
				}
				done := 0
				for _, t := range cp.Tasks {
					if t.Status.Terminal() {
						done++
					}
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\n", r.Revision, r.Status, cp.Status, cp.Phase, done, len(cp.Tasks), stamp(cp.UpdatedAt))
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newFork() *cobra.Command {
	var f clientFlags
	var req api.ForkRequest
	cmd := &cobra.Command{
		Use:   "fork [flags] WORKFLOW_ID --revision R",
		Short: "Start a new workflow from one of a workflow's checkpoint revisions (see agentbus history)",
		Long: "Start a new workflow from a kept checkpoint revision of WORKFLOW_ID: steps done by then keep\n" +
			"their outputs, the rest run again. Follow it with agentbus watch NEW_ID.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := workflowArg(args[0])
			if err != nil {
				return err
			}
			if req.Revision == 0 {
				return &exitError{code: exitUsage, msg: "--revision is required: a revision agentbus history " + args[0] + " lists"}
			}
			body, _ := json.Marshal(req)
			resp, err := newClientFor(f).do(cmd.Context(), http.MethodPost, "/v1/workflows/"+id+"/fork", body)
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				return &exitError{code: exitUsage, msg: apiErr(resp).Error()}
			}
			var out api.SubmitResponse
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				return &exitError{code: exitUsage, msg: "reading the answer: " + err.Error()}
			}
			w := cmd.OutOrStdout()
			if f.json {
				return printJSON(w, out)
			}
			fmt.Fprintf(w, "forked %s at revision %d as %s (%s); follow it with: agentbus watch %s\n", args[0], req.Revision, out.WorkflowID, out.Status, out.WorkflowID)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().Uint64Var(&req.Revision, "revision", 0, "the checkpoint revision to start from")
	cmd.Flags().StringVar(&req.WorkflowID, "id", "", "the new workflow's id (default: the gateway picks one)")
	return cmd
}

func newDelete() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "delete [flags] WORKFLOW_ID",
		Short: "Delete an ended workflow now: its state, history, events, session turn and upload",
		Long: "Delete an ended workflow now, whatever its retention: its checkpoint with every revision, its\n" +
			"events, its turn in its session and what is left of its upload. A workflow that has not ended is\n" +
			"refused (exit 1): cancel it first.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := workflowArg(args[0])
			if err != nil {
				return err
			}
			resp, err := newClientFor(f).do(cmd.Context(), http.MethodDelete, "/v1/workflows/"+id, nil)
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			defer resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
			case http.StatusConflict:
				return &exitError{code: exitFailed, msg: apiErr(resp).Error()}
			default:
				return &exitError{code: exitUsage, msg: apiErr(resp).Error()}
			}
			var out gateway.PurgeResponse
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				return &exitError{code: exitUsage, msg: "reading the answer: " + err.Error()}
			}
			w := cmd.OutOrStdout()
			if f.json {
				return printJSON(w, out)
			}
			p := out.Purged
			turn := ""
			if p.Turn {
				turn = ", its session turn"
			}
			payloads := ""
			if p.Payloads > 0 {
				payloads = fmt.Sprintf(", %d large payloads", p.Payloads)
			}
			fmt.Fprintf(w, "deleted workflow %s (%s): %d checkpoint revisions, %d events, %d other messages%s, %d uploaded files%s\n",
				out.WorkflowID, p.Status, p.Revisions, p.Events, p.Messages, turn, p.Uploads, payloads)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// workflowArg checks a workflow id given on the command line and escapes
// it for a path.
func workflowArg(id string) (string, error) {
	if err := subjects.ValidWorkflow(id); err != nil {
		return "", &exitError{code: exitUsage, msg: fmt.Sprintf("workflow id %q: want a token matching %s", id, subjects.TokenPattern)}
	}
	return url.PathEscape(id), nil
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stamp writes a time for a table, local to the minute.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell puts s on one line of at most n runes.
func cell(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return dash(s)
}
