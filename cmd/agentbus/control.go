package main

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
)

// newControl builds `cancel`, `resume` and `approve`: each posts to the
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
			c := newClientFor(f)
			resp, err := c.do(cmd.Context(), http.MethodPost, "/v1/workflows/"+args[0]+"/"+action, body)
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
		},
	}
	f.register(cmd)
	switch action {
	case events.ActionCancel:
		cmd.Flags().StringVar(&req.Reason, "reason", "", "why the workflow is canceled")
	case events.ActionApprove:
		cmd.Flags().BoolVar(&reject, "reject", false, "reject instead of approve (ends the workflow)")
		cmd.Flags().StringVar(&req.Comment, "comment", "", "a comment recorded with the decision")
		cmd.Flags().StringVar(&req.StepID, "step", "", "the step to decide (default: every step awaiting a decision)")
	}
	return cmd
}
