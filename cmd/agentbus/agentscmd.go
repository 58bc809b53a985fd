package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/discovery"
)

func newAgents() *cobra.Command {
	var f clientFlags
	var query string
	var k int
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List registered agent instances with their health and load, or rank agents for a query",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := newClientFor(f)
			path := "/v1/agents"
			if query != "" {
				path += "?query=" + url.QueryEscape(query) + "&k=" + strconv.Itoa(k)
			}
			resp, err := c.do(cmd.Context(), http.MethodGet, path, nil)
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return &exitError{code: exitUsage, msg: apiErr(resp).Error()}
			}
			var out struct {
				Embedder  string               `json:"embedder"`
				Instances []discovery.Instance `json:"instances"`
				Matches   []discovery.Match    `json:"matches"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				return &exitError{code: exitUsage, msg: "reading the answer: " + err.Error()}
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
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&query, "query", "", "rank agents by semantic similarity to this query")
	cmd.Flags().IntVarP(&k, "k", "k", 5, "how many agents to rank")
	return cmd
}
