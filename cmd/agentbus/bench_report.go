package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// latencies are bench's HDR histograms, in microseconds from 1 µs to an
// hour at three significant digits. Safe for concurrent use.
type latencies struct {
	mu sync.Mutex
	// endToEnd is submit → the complete event in bench's hands; step a
	// step's queued+run, stepQueued and stepRun its parts, as the
	// workers reported them in the complete event (or the state).
	endToEnd, step, stepQueued, stepRun *hdrhistogram.Histogram
}

func newLatencies() *latencies {
	h := func() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3) }
	return &latencies{endToEnd: h(), step: h(), stepQueued: h(), stepRun: h()}
}

// record adds one completed workflow: its end to end and every step's
// queued and run milliseconds.
func (l *latencies) record(e2e time.Duration, steps []stepTime) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.endToEnd.RecordValue(max(e2e.Microseconds(), 1))
	for _, s := range steps {
		_ = l.stepQueued.RecordValue(msToMicros(s.queuedMS))
		_ = l.stepRun.RecordValue(msToMicros(s.runMS))
		_ = l.step.RecordValue(msToMicros(s.queuedMS + s.runMS))
	}
}

// stepTime is one step's wait in the queue and run, in milliseconds.
type stepTime struct{ queuedMS, runMS float64 }

func msToMicros(ms float64) int64 { return max(int64(ms*1000+0.5), 1) }

// percentiles is one histogram's summary in milliseconds, as the JSON
// output has it.
type percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

func summarize(h *hdrhistogram.Histogram) percentiles {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return percentiles{Count: h.TotalCount(), P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)),
		P99: ms(h.ValueAtQuantile(99)), P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max()), Mean: h.Mean() / 1000}
}

// benchReport is what bench prints: the run's settings, its counts and
// rates, the latency percentiles in milliseconds and every workflow that
// did not complete as it should.
type benchReport struct {
	Transport   string  `json:"transport"` // "http" or "nats"
	Target      string  `json:"target"`
	Tenant      string  `json:"tenant"`
	Follow      string  `json:"follow"`
	Shape       string  `json:"shape"`
	Steps       int     `json:"steps"` // per workflow
	Work        string  `json:"work"`
	SleepMS     int     `json:"sleep_ms,omitempty"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate,omitempty"`
	IDPrefix    string  `json:"id_prefix"`

	Started   int `json:"started"`
	Completed int `json:"completed"`
	// StepsCompleted counts the steps of completed workflows, each once.
	StepsCompleted int `json:"steps_completed"`
	// Retried counts completed steps that took more than one attempt
	// (known from the state only: the HTTP tenant feed).
	Retried       int     `json:"retried,omitempty"`
	ElapsedS      float64 `json:"elapsed_s"`
	WorkflowsPerS float64 `json:"workflows_per_s"`
	StepsPerS     float64 `json:"steps_per_s"`

	Latency struct {
		EndToEnd   percentiles `json:"end_to_end"`
		Step       percentiles `json:"step"`
		StepQueued percentiles `json:"step_queued"`
		StepRun    percentiles `json:"step_run"`
	} `json:"latency_ms"`

	Problems []benchProblem `json:"problems,omitempty"`
	// StoppedEarly says bench stopped starting workflows before its
	// bound: a submission failed (or it was interrupted).
	StoppedEarly string `json:"stopped_early,omitempty"`
}

// benchProblem is a workflow that did not complete with each step once.
type benchProblem struct {
	WorkflowID string `json:"workflow_id"`
	Problem    string `json:"problem"`
}

func (r *benchReport) fill(l *latencies, elapsed time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.ElapsedS = elapsed.Seconds()
	if elapsed > 0 {
		r.WorkflowsPerS = float64(r.Completed) / elapsed.Seconds()
		r.StepsPerS = float64(r.StepsCompleted) / elapsed.Seconds()
	}
	r.Latency.EndToEnd = summarize(l.endToEnd)
	r.Latency.Step = summarize(l.step)
	r.Latency.StepQueued = summarize(l.stepQueued)
	r.Latency.StepRun = summarize(l.stepRun)
	// In start order: PREFIX-9 before PREFIX-10.
	sort.Slice(r.Problems, func(i, j int) bool {
		a, b := r.Problems[i].WorkflowID, r.Problems[j].WorkflowID
		return len(a) < len(b) || (len(a) == len(b) && a < b)
	})
}

func (r *benchReport) writeJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// writeTable prints the report for people, as nats bench does.
func (r *benchReport) writeTable(w io.Writer) error {
	var b strings.Builder
	what := fmt.Sprintf("%s of %d %s step%s", r.Shape, r.Steps, r.Work, plurals(r.Steps))
	if r.Work == "sleep" {
		what += fmt.Sprintf(" (%d ms)", r.SleepMS)
	}
	fmt.Fprintf(&b, "agentbus bench: %s, %d in flight", what, r.Concurrency)
	if r.Rate > 0 {
		fmt.Fprintf(&b, ", at most %g workflows/s", r.Rate)
	}
	fmt.Fprintf(&b, "\n  %s %s, tenant %s, following %s, ids %s-*\n\n", strings.ToUpper(r.Transport), r.Target, r.Tenant, r.Follow, r.IDPrefix)
	fmt.Fprintf(&b, "%d of %d workflows completed, each step once (%d steps) in %s\n", r.Completed, r.Started, r.StepsCompleted,
		time.Duration(r.ElapsedS*float64(time.Second)).Round(time.Millisecond))
	fmt.Fprintf(&b, "%10.1f workflows/s  %10.1f steps/s\n\n", r.WorkflowsPerS, r.StepsPerS)
	fmt.Fprintf(&b, "%-18s %9s %9s %9s %9s %9s %9s %9s\n", "latency (ms)", "count", "p50", "p90", "p99", "p99.9", "max", "mean")
	for _, row := range []struct {
		name string
		p    percentiles
	}{{"end to end", r.Latency.EndToEnd}, {"step (queue+run)", r.Latency.Step},
		{"  step queued", r.Latency.StepQueued}, {"  step run", r.Latency.StepRun}} {
		p := row.p
		fmt.Fprintf(&b, "%-18s %9d %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", row.name, p.Count, p.P50, p.P90, p.P99, p.P999, p.Max, p.Mean)
	}
	if r.StoppedEarly != "" {
		fmt.Fprintf(&b, "\nstopped starting workflows early: %s\n", r.StoppedEarly)
	}
	if r.Retried > 0 {
		fmt.Fprintf(&b, "\n%d step%s took more than one attempt (a redelivery), and counted once\n", r.Retried, plurals(r.Retried))
	}
	if len(r.Problems) > 0 {
		fmt.Fprintf(&b, "\n%d workflow%s did not complete:\n", len(r.Problems), plurals(len(r.Problems)))
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "  %s: %s\n", p.WorkflowID, p.Problem)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plurals(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
