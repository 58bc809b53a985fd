package orchestrator_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// storageSteps is the shape BenchmarkStorage measures: a chain of four
// echo steps.
const storageSteps = 4

// BenchmarkStorage measures what a completed workflow leaves on disk: it
// runs AGENTBUS_STORAGE_N (default 2,000) four-step echo chains, 16 at a
// time, on an embedded server with a t.TempDir() store, and reports the
// bytes each stream holds (JetStream's State.Bytes, the messages with
// their subjects and headers) and the store directory's growth, per
// workflow and per step. With -v it logs the table per stream.
//
//	go test -run '^$' -bench Storage -benchtime 1x -v ./orchestrator
func BenchmarkStorage(b *testing.B) {
	n := 2000
	if s := os.Getenv("AGENTBUS_STORAGE_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("AGENTBUS_STORAGE_N=%q: want a positive count", s)
		}
	}
	env := bustest.New(b)
	s := startOn(b, env)
	p := chainPlan(storageSteps)
	run := func(wf string) {
		submit(b, s.env.Bus, "default", wf, events.WorkflowSubmitted{Plan: p})
		if end := last(b, collect(b, s.env.Bus, "default", wf)); end.Type != events.TypeComplete {
			b.Errorf("%s ended %s", wf, end.Type)
		}
	}
	ctx := context.Background()
	empty := storeSize(b, env.Dir)
	before := streamBytes(ctx, b, env.Bus.JetStream())
	total := 0
	for b.Loop() {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= int64(n); i = next.Add(1) {
					run(fmt.Sprintf("store-%d-%d", total, i))
				}
			}()
		}
		wg.Wait()
		total += n
	}
	b.StopTimer()
	after := settled(ctx, b, env.Bus.JetStream())
	grown := storeSize(b, env.Dir) - empty
	wfs, steps := float64(total), float64(total*storageSteps)
	var sum int64
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range after {
			if !yield(k) {
				return
			}
		}
	})
	var table strings.Builder
	fmt.Fprintf(&table, "%d workflows of %d echo steps\n%-28s %12s %10s %10s %8s\n", total, storageSteps, "stream", "bytes", "B/workflow", "B/step", "msgs/wf")
	for _, name := range names {
		d := after[name].bytes - before[name].bytes
		m := after[name].msgs - before[name].msgs
		sum += d
		if d == 0 && m == 0 {
			continue
		}
		fmt.Fprintf(&table, "%-28s %12d %10.0f %10.0f %8.2f\n", name, d, float64(d)/wfs, float64(d)/steps, float64(m)/wfs)
		switch name {
		case "KV_" + subjects.BucketCheckpoints:
			b.ReportMetric(float64(d)/wfs, "checkpoint-B/workflow")
			b.ReportMetric(float64(m)/wfs, "revisions/workflow")
		case subjects.StreamEvents:
			b.ReportMetric(float64(d)/wfs, "events-B/workflow")
			b.ReportMetric(float64(m)/wfs, "events/workflow")
		}
	}
	fmt.Fprintf(&table, "%-28s %12d %10.0f %10.0f\n", "all streams", sum, float64(sum)/wfs, float64(sum)/steps)
	fmt.Fprintf(&table, "%-28s %12d %10.0f %10.0f\n", "store directory growth", grown, float64(grown)/wfs, float64(grown)/steps)
	b.Log("\n" + table.String())
	b.ReportMetric(float64(sum)/wfs, "B/workflow")
	b.ReportMetric(float64(sum)/steps, "B/step")
	b.ReportMetric(float64(grown)/wfs, "disk-B/workflow")
}

// usage is what one stream holds.
type usage struct{ bytes, msgs int64 }

// streamBytes reads every stream's State.Bytes and State.Msgs.
func streamBytes(ctx context.Context, t testing.TB, js jetstream.JetStream) map[string]usage {
	t.Helper()
	out := map[string]usage{}
	l := js.ListStreams(ctx)
	for info := range l.Info() {
		out[info.Config.Name] = usage{int64(info.State.Bytes), int64(info.State.Msgs)}
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// settled reads the streams once they stop changing: a completed
// workflow's last writes (a cleared outbox, a removed timer) may land
// after its complete event.
func settled(ctx context.Context, t testing.TB, js jetstream.JetStream) map[string]usage {
	t.Helper()
	prev := streamBytes(ctx, t, js)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		cur := streamBytes(ctx, t, js)
		if fmt.Sprint(cur) == fmt.Sprint(prev) {
			return cur
		}
		prev = cur
	}
	t.Fatal("streams still changing 30s after the last workflow completed")
	return nil
}

// storeSize is the bytes of every file under dir.
func storeSize(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
