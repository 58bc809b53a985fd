package main

import (
	"context"
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

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/gateway"
)

func newAgents() *cobra.Command {
	var f clientFlags
	var query string
	var k int
	var allTenants bool
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List registered agent instances with their health and load, and each capability's workers and queued steps; or rank agents for a query",
		Long: "List registered agent instances with their health and load, then per capability its workers' slots\n" +
			"and the tenant's steps: QUEUED waiting for admission (flow control), IN FLIGHT waiting for or held\n" +
			"by a worker, the oldest queued step's wait, and THROTTLED when they wait while a worker is idle\n" +
			"(the tenant's own limit). --all-tenants (admin token) shows every tenant's steps.\n" +
			"With --query, rank agents by semantic similarity instead.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := newClientFor(f)
			path := "/v1/agents"
			var capsErr error
			if query != "" {
				path += "?query=" + url.QueryEscape(query) + "&k=" + strconv.Itoa(k)
			}
			var out struct {
				Embedder     string               `json:"embedder"`
				Instances    []discovery.Instance `json:"instances"`
				Matches      []discovery.Match    `json:"matches"`
				Capabilities []gateway.Capability `json:"capabilities,omitempty"`
			}
			if err := getAnswer(cmd.Context(), c, path, &out); err != nil {
				return err
			}
			if query == "" {
				var caps gateway.CapabilitiesResponse
				p := "/v1/capabilities"
				if allTenants {
					p += "?all_tenants=true"
				}
				err := getAnswer(cmd.Context(), c, p, &caps)
				switch {
				case err != nil && allTenants:
					return err
				case err != nil:
					// A gateway older than GET /v1/capabilities still
					// lists its agents.
					fmt.Fprintf(cmd.ErrOrStderr(), "agentbus: no capability counts: %v\n", err)
					capsErr = err
				}
				out.Capabilities = caps.Capabilities
			}
			w := cmd.OutOrStdout()
			if f.json {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			defer tw.Flush()
			if query != "" {
				fmt.Fprintf(tw, "AGENT\tCAPABILITIES\tSCORE\tRANK\tINSTANCES\tHEALTHY\tLOAD\t(embedder %s)\n", out.Embedder)
				for _, m := range out.Matches {
					fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%d\t%d\t%.2f\t\n", m.Name, strings.Join(m.Capabilities, ","), m.Score, m.Rank,
						m.Instances, m.Healthy, m.Load)
				}
				return nil
			}
			fmt.Fprintln(tw, "AGENT\tVERSION\tCAPABILITIES\tHEALTH\tIN-FLIGHT\tPROCESSED\tERRORS\tAVG\tINSTANCE\tHOST/PID\tLAST HEARTBEAT")
			for _, in := range out.Instances {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%.1fms\t%s\t%s/%d\t%s ago\n", in.Name, in.Version,
					strings.Join(in.Capabilities, ","), in.Health, in.InFlight, in.Processed, in.Errors, in.AvgMS,
					in.Instance, in.Host, in.PID, time.Since(in.HeartbeatAt).Round(time.Millisecond))
			}
			if capsErr == nil {
				fmt.Fprintln(tw)
				printCapabilities(tw, out.Capabilities, allTenants)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&query, "query", "", "rank agents by semantic similarity to this query")
	cmd.Flags().IntVarP(&k, "k", "k", 5, "how many agents to rank")
	cmd.Flags().BoolVar(&allTenants, "all-tenants", false, "show every tenant's queued and in-flight steps (needs an admin token, or auth off)")
	return cmd
}

// getAnswer GETs path from the gateway and decodes a 200 answer into out.
func getAnswer(ctx context.Context, c *client, path string, out any) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &exitError{code: exitUsage, msg: apiErr(resp).Error()}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return &exitError{code: exitUsage, msg: "reading the answer of " + path + ": " + err.Error()}
	}
	return nil
}

// printCapabilities prints a capability a line: its healthy and
// registered instances, slots and idle slots, then the tenant's steps;
// with all, a line per tenant that has steps of it.
func printCapabilities(w io.Writer, caps []gateway.Capability, all bool) {
	if all {
		fmt.Fprintln(w, "CAPABILITY\tHEALTHY\tSLOTS\tIDLE\tTENANT\tQUEUED\tIN FLIGHT\tOLDEST QUEUED\tTHROTTLED")
	} else {
		fmt.Fprintln(w, "CAPABILITY\tHEALTHY\tSLOTS\tIDLE\tQUEUED\tIN FLIGHT\tOLDEST QUEUED\tTHROTTLED")
	}
	for _, c := range caps {
		workers := fmt.Sprintf("%s\t%d/%d\t%d\t%d", c.Capability, c.Healthy, c.Instances, c.Slots, c.Idle)
		if !all {
			fmt.Fprintf(w, "%s\t%s\n", workers, stepColumns(c.TenantSteps))
			continue
		}
		if len(c.Tenants) == 0 {
			fmt.Fprintf(w, "%s\t-\t0\t0\t-\tno\n", workers)
		}
		for _, ts := range c.Tenants {
			fmt.Fprintf(w, "%s\t%s\t%s\n", workers, ts.TenantID, stepColumns(ts))
		}
	}
}

// stepColumns is a tenant's QUEUED, IN FLIGHT, OLDEST QUEUED and THROTTLED
// columns; queued steps of more than one priority are split, highest
// first: "12 (p5:2 p1:10)".
func stepColumns(ts gateway.TenantSteps) string {
	queued := strconv.FormatUint(ts.Queued, 10)
	if len(ts.QueuedByPriority) > 1 {
		var parts []string
		for p := 5; p >= 1; p-- {
			if n := ts.QueuedByPriority[strconv.Itoa(p)]; n > 0 {
				parts = append(parts, fmt.Sprintf("p%d:%d", p, n))
			}
		}
		queued += " (" + strings.Join(parts, " ") + ")"
	}
	oldest := "-"
	if ts.OldestQueuedMS != nil {
		d := time.Duration(*ts.OldestQueuedMS) * time.Millisecond
		if d >= time.Second {
			d = d.Round(100 * time.Millisecond)
		}
		oldest = d.String()
	}
	throttled := "no"
	if ts.Throttled {
		throttled = "yes"
	}
	return fmt.Sprintf("%s\t%d\t%s\t%s", queued, ts.InFlight, oldest, throttled)
}
