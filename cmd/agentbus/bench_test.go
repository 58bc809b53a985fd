package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// benchJSON runs agentbus bench --json with args and reads its report.
func benchJSON(t *testing.T, args ...string) (int, benchReport, string) {
	t.Helper()
	code, out, stderr := cli(t, append([]string{"bench", "--json"}, args...)...)
	var r benchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench %v: exit %d, output is not a JSON report (%v):\n%s\n%s", args, code, err, out, stderr)
	}
	return code, r, stderr
}

// checkPercentiles fails unless p has count values and p50 ≤ p90 ≤ p99 ≤
// p99.9 ≤ max.
func checkPercentiles(t *testing.T, what string, p percentiles, count int64) {
	t.Helper()
	if p.Count != count {
		t.Errorf("%s: count %d, want %d", what, p.Count, count)
	}
	if !(0 < p.P50 && p.P50 <= p.P90 && p.P90 <= p.P99 && p.P99 <= p.P999 && p.P999 <= p.Max) {
		t.Errorf("%s: percentiles not ordered (want 0 < p50 ≤ p90 ≤ p99 ≤ p99.9 ≤ max): %+v", what, p)
	}
}

func TestBenchCompletesEveryWorkflowOverHTTPAndNATS(t *testing.T) {
	s := startServe(t, t.TempDir())
	for _, tc := range []struct {
		name  string
		args  []string
		steps int
	}{
		{"http chain", []string{"--url", s.info.HTTPURL, "--shape", "chain", "--steps", "3"}, 3},
		{"http diamond, one follower a workflow", []string{"--url", s.info.HTTPURL, "--shape", "diamond", "--follow", "workflow"}, 4},
		{"nats fanout", []string{"--nats", s.info.NATSURL, "--shape", "fanout", "--steps", "3"}, 3},
		{"nats chain of sleeps, one follower a workflow", []string{"--nats", s.info.NATSURL, "--work", "sleep", "--sleep-ms", "1", "--steps", "2", "--follow", "workflow"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 12
			code, r, stderr := benchJSON(t, append(tc.args, "--count", "12", "--concurrency", "4", "--rate", "200")...)
			if code != exitCompleted || r.Started != n || r.Completed != n || r.StepsCompleted != n*tc.steps || len(r.Problems) != 0 {
				t.Fatalf("exit %d (want 0), started %d, completed %d, steps %d (want %d, %d, %d), problems %v\n%s",
					code, r.Started, r.Completed, r.StepsCompleted, n, n, n*tc.steps, r.Problems, stderr)
			}
			if r.WorkflowsPerS <= 0 || r.StepsPerS < r.WorkflowsPerS || r.Steps != tc.steps {
				t.Errorf("rates: %g workflows/s, %g steps/s, %d steps a workflow", r.WorkflowsPerS, r.StepsPerS, r.Steps)
			}
			checkPercentiles(t, "end to end", r.Latency.EndToEnd, n)
			checkPercentiles(t, "step", r.Latency.Step, int64(n*tc.steps))
			if r.Latency.Step.P50 > r.Latency.EndToEnd.Max {
				t.Errorf("a step's p50 %g ms is past the slowest workflow's end to end %g ms", r.Latency.Step.P50, r.Latency.EndToEnd.Max)
			}
		})
	}

	// The table for people says the same.
	code, out, stderr := cli(t, "bench", "--url", s.info.HTTPURL, "--count", "3", "--id-prefix", "table")
	if code != exitCompleted || !strings.Contains(out, "3 of 3 workflows completed") || !strings.Contains(out, "end to end") ||
		!strings.Contains(out, "p99.9") {
		t.Fatalf("bench (table): exit %d:\n%s%s", code, out, stderr)
	}
	// Ids are the run's: a second run with the same prefix is refused, and
	// says which workflow.
	code, r, stderr := benchJSON(t, "--url", s.info.HTTPURL, "--count", "3", "--id-prefix", "table")
	if code != exitFailed || len(r.Problems) == 0 || !strings.Contains(stderr, "table-0: submit") || !strings.Contains(stderr, "409") ||
		r.StoppedEarly == "" {
		t.Fatalf("bench with a used prefix: exit %d (want %d), report %+v:\n%s", code, exitFailed, r, stderr)
	}
}

func TestBenchNamesEveryWorkflowThatDidNotComplete(t *testing.T) {
	s := startServe(t, t.TempDir())
	for _, tc := range []struct{ name, flag, url string }{
		{"http", "--url", s.info.HTTPURL},
		{"nats", "--nats", s.info.NATSURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "slow-" + tc.name
			code, r, stderr := benchJSON(t, tc.flag, tc.url, "--count", "2", "--work", "sleep", "--sleep-ms", "20000",
				"--steps", "1", "--timeout", "500ms", "--id-prefix", prefix)
			if code != exitFailed || r.Completed != 0 || len(r.Problems) != 2 {
				t.Fatalf("exit %d (want %d), report %+v:\n%s", code, exitFailed, r, stderr)
			}
			for i, p := range r.Problems {
				id := prefix + "-" + string(rune('0'+i))
				if p.WorkflowID != id || !strings.Contains(p.Problem, "--timeout") || !strings.Contains(p.Problem, "s1 (sleep, working)") {
					t.Errorf("problem %d: %+v: want %s, not complete after --timeout, its sleep step working", i, p, id)
				}
				if !strings.Contains(stderr, id+": not complete 500ms after its submission") {
					t.Errorf("stderr does not name %s:\n%s", id, stderr)
				}
			}
			if !strings.Contains(stderr, "2 of 2 workflows did not complete") {
				t.Errorf("stderr: %s", stderr)
			}
		})
	}

	// A deployment that is gone: no report, a clear message, exit 3.
	url := s.info.HTTPURL
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "bench", "--url", url, "--count", "1")
	if code != exitUsage || !strings.Contains(stderr, "cannot reach agentbus at "+url) || out != "" {
		t.Fatalf("bench against a stopped server: exit %d (want %d):\n%s%s", code, exitUsage, out, stderr)
	}
}

func TestBenchChecksItsFlags(t *testing.T) {
	code, _, stderr := cli(t, "bench", "--shape", "star", "--work", "think", "--steps", "0", "--concurrency", "0",
		"--rate", "-1", "--timeout", "0s", "--id-prefix", "Bad!", "--follow", "both")
	for _, want := range []string{`--shape "star"`, `--work "think"`, "--steps 0", "--concurrency 0", "--rate -1", "--timeout 0s",
		`--id-prefix "Bad!"`, `--follow "both"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not name %s:\n%s", want, stderr)
		}
	}
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	if code, _, stderr := cli(t, "bench", "--url", "http://127.0.0.1:1", "--nats", "nats://127.0.0.1:1"); code != exitUsage ||
		!strings.Contains(stderr, "not both") {
		t.Errorf("--url and --nats: exit %d: %s", code, stderr)
	}
}
