package orchestrator_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
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

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// storageSteps is the shape BenchmarkStorage measures: a chain of four
// echo steps.
const storageSteps = 4

// BenchmarkStorage measures what a completed workflow leaves on disk: it
// runs AGENTBUS_STORAGE_N (default 2,000) four-step echo chains, 16 at a
// time, on an embedded server with a t.TempDir() store, and reports per
// workflow and per step the bytes each stream holds (JetStream's
// State.Bytes: the messages with their subjects and headers), what they
// take at rest (at the compression ratio of the stream's sealed blocks;
// a stream with none yet counts as uncompressed: the events stream seals
// its first 8 MiB block after about 700 echo workflows) and on disk now
// (the newest block of each stream is not compressed yet), and the store directory's growth; the table per stream is in the
// log. "echo" steps carry the input "x", the same in every workflow;
// "unique-input" steps 256 random bytes (base64) of their workflow's own,
// which nothing but the workflow's other messages repeats. The metric
// B/workflow is what is kept (checkpoints and events, at rest); the run
// ends by forking its first workflow from each of its revisions.
//
//	go test -run '^$' -bench Storage -benchtime 1x ./orchestrator
func BenchmarkStorage(b *testing.B) {
	n := 2000
	if s := os.Getenv("AGENTBUS_STORAGE_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("AGENTBUS_STORAGE_N=%q: want a positive count", s)
		}
	}
	b.Run("echo", func(b *testing.B) {
		p := chainPlan(storageSteps)
		benchStorage(b, n, func() *events.Plan { return p })
	})
	b.Run("unique-input", func(b *testing.B) {
		benchStorage(b, n, func() *events.Plan {
			p := chainPlan(storageSteps)
			r := make([]byte, 256)
			_, _ = rand.Read(r)
			in, _ := json.Marshal(base64.StdEncoding.EncodeToString(r))
			for i := range p.Steps {
				p.Steps[i].Input = in
			}
			return p
		})
	})
}

// benchStorage runs n workflows of plan's per loop and reports.
//
// The store is as a deployment's by default (streams not compressed,
// each checkpoint zstd-compressed against the shipped dictionary), or
// with AGENTBUS_STORAGE_COMPRESS=1 as with --compress-streams (streams
// S2-compressed, checkpoints then stored plain).
func benchStorage(b *testing.B, n int, plan func() *events.Plan) {
	compress := os.Getenv("AGENTBUS_STORAGE_COMPRESS") == "1"
	env := bustest.NewWithOptions(b, bustest.Options{Streams: bus.StreamsConfig{Compress: compress}})
	// With the streams compressed the orchestrator stores plain
	// checkpoints (S2 compresses them across revisions better).
	s := startOn(b, env)
	run := func(wf string) {
		submit(b, s.env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan()})
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
	names := slices.Sorted(maps.Keys(after))
	// One log of at most 10 lines: the testing package cuts a
	// benchmark's log there without -v.
	var table strings.Builder
	fmt.Fprintf(&table, "%d workflows of %d echo steps\n%-24s %8s %11s %11s %11s %9s\n",
		total, storageSteps, "stream", "msgs/wf", "B/workflow", "at rest", "disk now", "B/step")
	var sum, rest, disk, kept int64
	for _, name := range names {
		quiet := false
		d := after[name].bytes - before[name].bytes
		m := after[name].msgs - before[name].msgs
		if d == 0 && m == 0 {
			continue
		}
		if d < int64(total) {
			// Under a byte a workflow (agent heartbeats, leases): in
			// the sums, not a row of its own.
			quiet = true
		}
		blocks := streamBlocks(b, env.Dir, name)
		r := blocks.atRest(d)
		sum, rest, disk = sum+d, rest+r, disk+blocks.disk
		label := name
		if transient[name] {
			label += " *"
		} else {
			kept += r
		}
		if !quiet {
			fmt.Fprintf(&table, "%-24s %8.2f %11.0f %11.0f %11.0f %9.0f\n", label, float64(m)/wfs,
				float64(d)/wfs, float64(r)/wfs, float64(blocks.disk)/wfs, float64(r)/steps)
		}
		switch name {
		case "KV_" + subjects.BucketCheckpoints:
			b.ReportMetric(float64(r)/wfs, "checkpoint-B/workflow")
			b.ReportMetric(float64(m)/wfs, "revisions/workflow")
		case subjects.StreamEvents:
			b.ReportMetric(float64(r)/wfs, "events-B/workflow")
			b.ReportMetric(float64(m)/wfs, "events/workflow")
		}
	}
	fmt.Fprintf(&table, "%-24s %8s %11.0f %11.0f %11.0f %9.0f\n", "all streams", "", float64(sum)/wfs, float64(rest)/wfs, float64(disk)/wfs, float64(rest)/steps)
	fmt.Fprintf(&table, "%-24s %8s %11s %11.0f %11s %9.0f\n", "kept (without *)", "", "", float64(kept)/wfs, "", float64(kept)/steps)
	forked := forkEvery(b, s, "store-0-1") // after the store is read
	fmt.Fprintf(&table, "* gone within minutes of the end; store dir grew %.0f B/workflow; store-0-1 forked from each of its %d revisions",
		float64(grown)/wfs, forked)
	b.Log("\n" + table.String())
	b.ReportMetric(float64(kept)/wfs, "B/workflow")
	b.ReportMetric(float64(kept)/steps, "B/step")
	b.ReportMetric(float64(sum)/wfs, "stored-B/workflow")
}

// forkEvery forks the first workflow from each of its revisions, which
// are in its bucket's oldest block (sealed and compressed once the run
// wrote more than a block): each fork must complete. It returns how many
// there were.
func forkEvery(b *testing.B, s *stack, wf string) int {
	b.Helper()
	hist, err := s.orch.History(context.Background(), "default", wf)
	if err != nil || len(hist) == 0 {
		b.Fatalf("history of %s: %d revisions, %v", wf, len(hist), err)
	}
	for _, h := range hist {
		fork := fmt.Sprintf("fork-%s-%d", wf, h.Revision)
		submit(b, s.env.Bus, "default", fork, events.WorkflowSubmitted{Fork: &events.ForkOf{WorkflowID: wf, Revision: h.Revision}})
		if end := last(b, collect(b, s.env.Bus, "default", fork)); end.Type != events.TypeComplete {
			b.Fatalf("fork of %s from revision %d ended %s %s", wf, h.Revision, end.Type, end.Data)
		}
	}
	return len(hist)
}

// blocks is what a stream's message blocks hold on disk.
type blocks struct {
	// disk is the size of every block file; sealed and original are the
	// sizes of the blocks before the newest (the one being written, which
	// the server compresses only once it is full), on disk and before
	// compression.
	disk, sealed, original int64
}

// atRest projects logical bytes onto the disk at the sealed blocks'
// compression ratio: what the stream costs once its newest block is
// sealed too (the newest block is a few MiB whatever the stream holds).
func (bl blocks) atRest(logical int64) int64 {
	if bl.original == 0 {
		return logical
	}
	return logical * bl.sealed / bl.original
}

// streamBlocks reads the sizes of a stream's message blocks under the
// store dir, and the original size a compressed block records in its
// header ("cmp", the algorithm, a uvarint).
func streamBlocks(t testing.TB, dir, stream string) blocks {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", stream, "msgs", "*.blk"))
	if err != nil {
		t.Fatal(err)
	}
	index := func(f string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".blk"))
		return n
	}
	slices.SortFunc(files, func(a, b string) int { return index(a) - index(b) })
	var bl blocks
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bl.disk += int64(len(data))
		if i == len(files)-1 {
			break
		}
		bl.sealed += int64(len(data))
		orig := int64(len(data))
		if len(data) > 4 && string(data[:3]) == "cmp" && data[3] == 1 {
			if v, n := binary.Uvarint(data[4:]); n > 0 {
				orig = int64(v)
			}
		}
		bl.original += orig
	}
	return bl
}

// transient are the streams whose messages leave soon after the workflow
// ends: work queues (an acknowledged step or reply goes at once) and
// timers (the watchdog's schedule, which fires Config.StepLease after the
// last dispatch and finds the workflow ended).
var transient = map[string]bool{
	subjects.StreamWorkflows: true, subjects.StreamSteps: true, subjects.StreamReplies: true,
	subjects.StreamQueue: true, subjects.StreamTimers: true,
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
