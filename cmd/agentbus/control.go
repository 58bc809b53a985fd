package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
)

// newControl builds `cancel`, `resume`, `approve`, `pause` and
// `unpause`: each posts to the
// workflow's control endpoint and prints the result. Exit 0 when applied,
// 1 when it did not apply (e.g. the workflow already ended), 3 on error.
func newControl(action, short string) *cobra.Command {
	var f clientFlags
	var req api.ControlRequest
	var reject bool
	cmd := &cobra.Command{
		Use:   action + " [flags] WORKFLOW_ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if action == events.ActionApprove && reject {
				no := false
				req.Approve = &no
			}
			body, _ := json.Marshal(req)
			return postControl(cmd, f, "/v1/workflows/"+url.PathEscape(args[0])+"/"+action, body)
		},
	}
	f.register(cmd)
	switch action {
	case events.ActionCancel:
		cmd.Flags().StringVar(&req.Reason, "reason", "", "why the workflow is canceled")
	case events.ActionPause:
		cmd.Flags().StringVar(&req.Reason, "reason", "", "why the workflow is paused (in its events)")
	case events.ActionApprove:
		cmd.Flags().BoolVar(&reject, "reject", false, "reject instead of approve (ends the workflow)")
		cmd.Flags().StringVar(&req.Comment, "comment", "", "a comment recorded with the decision")
		cmd.Flags().StringVar(&req.StepID, "step", "", "the step to decide (default: every step awaiting a decision)")
	}
	return cmd
}

// postControl posts a control body to path and prints the result (JSON
// with --json): exit 0 applied, 1 not applied, 3 on error.
func postControl(cmd *cobra.Command, f clientFlags, path string, body []byte) error {
	c := newClientFor(f)
	resp, err := c.do(cmd.Context(), http.MethodPost, path, body)
	if err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		return &exitError{code: exitUsage, msg: apiErr(resp).Error()}
	}
	var res events.ControlResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return &exitError{code: exitUsage, msg: "reading the answer: " + err.Error()}
	}
	if f.json {
		b, _ := json.Marshal(res)
		fmt.Fprintln(cmd.OutOrStdout(), string(b))
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "workflow %s: %s (status %s)\n", res.WorkflowID, res.Message, res.Status)
	}
	if !res.Applied {
		return &exitError{code: exitFailed}
	}
	return nil
}

// newSignal builds `signal WORKFLOW_ID NAME [JSON]`: it sends the
// workflow signal NAME with the JSON body (none: null; "-": read from
// stdin), as POST /v1/workflows/{id}/signals/{name}. Exit codes as the
// other controls'.
func newSignal() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "signal [flags] WORKFLOW_ID NAME [JSON]",
		Short: "Send a workflow a signal: the wait step waiting for NAME completes with the JSON as its output",
		Long: "Send a workflow a signal. The wait step waiting for NAME ({\"signal\": NAME}) completes with the JSON as its\n" +
			"output; if none waits yet, the workflow keeps the signal for the one that will. JSON is any JSON value\n" +
			"(none: null; \"-\": read from stdin). A workflow that has ended does not take it (exit 1).",
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := []byte("null")
			if len(args) == 3 {
				body = []byte(args[2])
			}
			if len(args) == 3 && args[2] == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return &exitError{code: exitUsage, msg: "reading stdin: " + err.Error()}
				}
				body = b
			}
			if !json.Valid(body) {
				return &exitError{code: exitUsage, msg: fmt.Sprintf("the signal's body %q is not JSON (quote a string: '\"yes\"')", clipArg(string(body)))}
			}
			return postControl(cmd, f, "/v1/workflows/"+url.PathEscape(args[0])+"/signals/"+url.PathEscape(args[1]), body)
		},
	}
	f.register(cmd)
	return cmd
}

func clipArg(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
