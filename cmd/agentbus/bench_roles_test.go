package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbus/agentbus/bus/bustest"
)

// rolesWarmup is how many workflows the warm-up bench runs before the
// measured one: connections, consumers and the processes' heaps settle.
const rolesWarmup = 200

// BenchmarkRoles measures the CPU each of agentbus's roles spends per
// workflow step when every role is an OS process of its own (issue #24
// item 1): nats-server -js, one orchestrator, one worker serving echo and
// the load generator, agentbus bench over NATS. After a warm-up bench the
// server's, orchestrator's and worker's CPU (utime+stime) is read from
// /proc/<pid>/stat; the measured bench runs; the CPU is read again once it
// exited. The bench's own CPU is its rusage, the whole process. Each
// delta is divided by the steps the measured bench completed, and the
// bench must report every workflow completed. Only with
// AGENTBUS_BENCH_ROLES=1 (make test never runs it):
//
//	AGENTBUS_BENCH_ROLES=1 go test -run '^$' -bench Roles -benchtime 1x ./cmd/agentbus
func BenchmarkRoles(b *testing.B) {
	if os.Getenv("AGENTBUS_BENCH_ROLES") != "1" {
		b.Skip("set AGENTBUS_BENCH_ROLES=1 to run agentbus's roles as processes and measure their CPU per step")
	}
	// The counts give each measured bench 10 to 15 s on two shared cores;
	// b.N multiplies them.
	cases := []struct {
		name                      string
		steps, concurrency, count int
	}{
		{"chain10-inflight16", 10, 16, 3000},
		{"chain1-inflight1", 1, 1, 8000},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.StopTimer()
			d := startRoles(b)
			d.bench(b, "warm", tc.steps, tc.concurrency, rolesWarmup)
			before := d.cpu(b)
			b.StartTimer()
			rep, benchCPU := d.bench(b, "measured", tc.steps, tc.concurrency, tc.count*b.N)
			b.StopTimer()
			after := d.cpu(b)
			d.stop(b)

			usage := []roleCPU{
				{"server", after[0] - before[0]},
				{"orchestrator", after[1] - before[1]},
				{"worker", after[2] - before[2]},
				{"bench", benchCPU},
			}
			reportRoles(b, fmt.Sprintf("chain of %d echo step%s, %d in flight", tc.steps, plurals(tc.steps), tc.concurrency), rep, usage)
		})
	}
}

// roleCPU is the CPU one process spent over the measured bench.
type roleCPU struct {
	role string
	cpu  time.Duration
}

// reportRoles reports each role's CPU per step, their sum and steps/s as
// metrics, and logs them as a table.
func reportRoles(b *testing.B, what string, rep benchReport, usage []roleCPU) {
	perStep := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(rep.StepsCompleted) }
	var total time.Duration
	for _, u := range usage {
		total += u.cpu
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "%s: %d steps in %.1fs, %.0f steps/s, %.2f cores busy (CLK_TCK %d)\n",
		what, rep.StepsCompleted, rep.ElapsedS, rep.StepsPerS, total.Seconds()/rep.ElapsedS, clockTicks())
	w := tabwriter.NewWriter(&tab, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "role\tCPU µs/step\tshare\t")
	for _, u := range append(usage, roleCPU{"total", total}) {
		b.ReportMetric(perStep(u.cpu), u.role+"-cpu-µs/step")
		fmt.Fprintf(w, "%s\t%.1f\t%.0f%%\t\n", u.role, perStep(u.cpu), 100*u.cpu.Seconds()/total.Seconds())
	}
	_ = w.Flush()
	b.ReportMetric(rep.StepsPerS, "steps/s")
	b.Log("\n" + tab.String())
}

// roles is a deployment of one process per role.
type roles struct {
	bin, natsURL                 string
	server, orchestrator, worker *proc
}

// startRoles starts nats-server, an orchestrator and a worker, each
// ready before the next starts.
func startRoles(b *testing.B) *roles {
	b.Helper()
	addr := bustest.FreeAddr(b)
	host, port, _ := strings.Cut(addr, ":")
	d := &roles{bin: agentbusBinary(b), natsURL: "nats://" + addr}
	d.server = startBinary(b, natsServerBinary(b), "-js", "-sd", b.TempDir(), "-a", host, "-p", port)
	d.server.waitLine(b, regexp.MustCompile(`Server is ready`))
	d.orchestrator = startBinary(b, d.bin, "orchestrator", "--nats", d.natsURL)
	d.orchestrator.waitLine(b, orchestratorLine)
	d.worker = startBinary(b, d.bin, "worker", "--nats", d.natsURL, "--capabilities", "echo")
	d.worker.waitLine(b, workerLine)
	return d
}

// cpu reads the server's, orchestrator's and worker's CPU, in that order.
func (d *roles) cpu(b *testing.B) [3]time.Duration {
	b.Helper()
	return [3]time.Duration{d.server.cpu(b), d.orchestrator.cpu(b), d.worker.cpu(b)}
}

// stop stops the roles with SIGTERM, the clients before the server.
func (d *roles) stop(b *testing.B) {
	b.Helper()
	for _, p := range []*proc{d.worker, d.orchestrator, d.server} {
		p.stop(b, 30*time.Second)
	}
}

// bench runs agentbus bench as a process: count chains of steps echo
// steps, concurrency in flight. It fails unless every workflow
// completed, and returns the report and the CPU the bench spent (its
// rusage: /proc/<pid>/stat is gone once the process was waited for).
func (d *roles) bench(b *testing.B, prefix string, steps, concurrency, count int) (benchReport, time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin, "bench", "--nats", d.natsURL, "--shape", "chain", "--steps", strconv.Itoa(steps),
		"--concurrency", strconv.Itoa(concurrency), "--count", strconv.Itoa(count), "--id-prefix", prefix, "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var r benchReport
	if jerr := json.Unmarshal(stdout.Bytes(), &r); jerr != nil {
		b.Fatalf("bench %s: %v; output is not a JSON report (%v):\n%s%s", prefix, err, jerr, stdout.String(), stderr.String())
	}
	if err != nil || r.Started != count || r.Completed != count || r.StepsCompleted != count*steps || len(r.Problems) > 0 || r.StoppedEarly != "" {
		b.Fatalf("bench %s: %v: started %d, completed %d, steps %d (want %d, %d, %d), problems %v, stopped early %q\n%s",
			prefix, err, r.Started, r.Completed, r.StepsCompleted, count, count, count*steps, r.Problems, r.StoppedEarly, stderr.String())
	}
	return r, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// cpu is the CPU the process has spent so far.
func (p *proc) cpu(b *testing.B) time.Duration {
	b.Helper()
	d, err := procCPU(p.pid())
	if err != nil {
		b.Fatalf("%s: %v", p.cmd.Args, err)
	}
	return d
}

// stop sends SIGTERM and waits for the process to exit.
func (p *proc) stop(b *testing.B, within time.Duration) {
	b.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatalf("%s: SIGTERM: %v", p.cmd.Args, err)
	}
	select {
	case <-p.done:
	case <-time.After(within):
		b.Fatalf("%s did not exit within %s of SIGTERM", p.cmd.Args, within)
	}
}

// procCPU is the CPU, user and system, that process pid has spent, as
// /proc/<pid>/stat counts it in clock ticks.
func procCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command (field 2) is parenthesised and may hold spaces: count
	// fields after its closing parenthesis, which is field 3.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command in %q", pid, stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format %q", pid, stat)
	}
	utime, uerr := strconv.ParseInt(f[14-3], 10, 64)
	stime, serr := strconv.ParseInt(f[15-3], 10, 64)
	if uerr != nil || serr != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[14-3], f[15-3])
	}
	return time.Duration(utime+stime) * time.Second / time.Duration(clockTicks()), nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times. The kernel
// hands it to every process in its auxiliary vector as AT_CLKTCK, where
// getconf CLK_TCK reads it too; 100 is its value on every architecture
// Linux has.
var clockTicks = sync.OnceValue(func() int64 {
	const atClkTck = 17 // <linux/auxvec.h>
	if auxv, err := unix.Auxv(); err == nil {
		for _, kv := range auxv {
			if kv[0] == atClkTck && kv[1] > 0 {
				return int64(kv[1])
			}
		}
	}
	return 100
})

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
