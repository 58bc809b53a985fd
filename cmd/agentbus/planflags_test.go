package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func TestStepLeaseFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		worker  bool // the command runs workers too (serve): it has --ack-wait
		args    []string
		want    time.Duration
		wantErr []string
	}{
		{name: "orchestrator default", want: 90 * time.Second},
		{name: "serve default follows --ack-wait", worker: true, args: []string{"--ack-wait", "40s"}, want: 2 * time.Minute},
		{name: "set", args: []string{"--step-lease", "45s"}, want: 45 * time.Second},
		{name: "equal to --ack-wait", worker: true, args: []string{"--ack-wait", "5s", "--step-lease", "5s"}, want: 5 * time.Second},
		{name: "negative", args: []string{"--step-lease", "-1s"}, wantErr: []string{"--step-lease", "AGENTBUS_STEP_LEASE", "must be positive"}},
		{name: "below --ack-wait", worker: true, args: []string{"--ack-wait", "10s", "--step-lease", "5s"}, wantErr: []string{"--step-lease", "5s", "below --ack-wait 10s"}},
		{name: "below the workers' default", args: []string{"--step-lease", "10s"}, wantErr: []string{"--step-lease", "10s", "below the workers' default --ack-wait 30s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &cobra.Command{}
			var wf workerFlags
			if tc.worker {
				wf.register(cmd)
			}
			var pf planFlags
			pf.register(cmd)
			if err := cmd.Flags().Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := pf.lease()
			if perr := cmd.PreRunE(cmd, nil); (perr == nil) != (err == nil) {
				t.Errorf("PreRunE = %v, lease() = %v: the command must refuse the flag before it runs", perr, err)
			}
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("lease() = %s, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("lease() = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}
