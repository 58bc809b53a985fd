package bus_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// checkpointsStream is the checkpoints bucket's stream.
const checkpointsStream = "KV_" + subjects.BucketCheckpoints

// compressed are the streams Provision compresses; the others are work
// queues or small.
var compressed = map[string]bool{subjects.StreamEvents: true, checkpointsStream: true}

func compression(t testing.TB, env *bustest.Env, stream string) jetstream.StoreCompression {
	t.Helper()
	s, err := env.Bus.JetStream().Stream(testCtx(t), stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	return s.CachedInfo().Config.Compression
}

func TestProvisionCompressesCheckpointsAndEvents(t *testing.T) {
	t.Parallel()
	env := bustest.NewWithOptions(t, bustest.Options{Streams: bus.StreamsConfig{Compress: true}})
	for _, name := range []string{subjects.StreamEvents, checkpointsStream, subjects.StreamSteps,
		subjects.StreamReplies, subjects.StreamWorkflows, "KV_" + subjects.BucketControl} {
		want := jetstream.NoCompression
		if compressed[name] {
			want = jetstream.S2Compression
		}
		if got := compression(t, env, name); got != want {
			t.Errorf("%s compression = %s, want %s", name, got, want)
		}
	}
}

// TestProvisionCompressionOfAnExistingDeployment starts from a store
// provisioned before compression (the two streams uncompressed, revisions
// written), then provisions again: without UpdateReplicas the streams stay
// as they are and keep working; with it compression is turned on, and
// after a restart the server compresses the blocks it seals, while every
// revision, from the blocks before and after, still reads.
func TestProvisionCompressionOfAnExistingDeployment(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	js := env.Bus.JetStream()
	for name := range compressed {
		s, err := js.Stream(testCtx(t), name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.Compression = jetstream.NoCompression
		if _, err := js.UpdateStream(testCtx(t), cfg); err != nil {
			t.Fatalf("uncompress %s: %v", name, err)
		}
	}
	// The store as an older agentbus left it: a restart makes the server
	// load the streams uncompressed.
	if err := env.Server.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	env = bustest.NewWithOptions(t, bustest.Options{Dir: env.Dir, NoProvision: true})
	if err := env.Bus.Provision(testCtx(t), bus.StreamsConfig{Compress: true}); err != nil {
		t.Fatalf("provision over uncompressed streams: %v, want them accepted", err)
	}
	for name := range compressed {
		if got := compression(t, env, name); got != jetstream.NoCompression {
			t.Errorf("%s compression = %s after a provision without UpdateReplicas, want it left none", name, got)
		}
	}
	// Each half is more than a 4 MiB block of revisions: one block is
	// sealed uncompressed before the restart, one compressed after.
	const keys, revs = 50, 60
	value := func(k, r int) []byte {
		return []byte(fmt.Sprintf(`{"workflow_id":"w%d","revision":%d,"pad":%q}`, k, r, strings.Repeat("checkpoint ", 300)))
	}
	put := func(env *bustest.Env, from, to int) {
		t.Helper()
		kv, err := env.Bus.JetStream().KeyValue(testCtx(t), subjects.BucketCheckpoints)
		if err != nil {
			t.Fatal(err)
		}
		for r := from; r < to; r++ {
			for k := range keys {
				if _, err := kv.Put(testCtx(t), fmt.Sprintf("%s.w%d", tenant, k), value(k, r)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	put(env, 0, revs/2)
	publishEvent(t, env.Bus, "w1", 1)

	if err := env.Bus.Provision(testCtx(t), bus.StreamsConfig{UpdateReplicas: true, Compress: true}); err != nil {
		t.Fatalf("provision with UpdateReplicas: %v", err)
	}
	for name := range compressed {
		if got := compression(t, env, name); got != jetstream.S2Compression {
			t.Errorf("%s compression = %s after a provision with UpdateReplicas, want s2", name, got)
		}
	}
	if err := env.Server.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	env = bustest.NewWithOptions(t, bustest.Options{Dir: env.Dir})
	put(env, revs/2, revs)
	publishEvent(t, env.Bus, "w1", 2)

	plain, packed := blocks(t, env.Dir, checkpointsStream)
	if plain < 2 || packed == 0 {
		t.Errorf("checkpoint blocks: %d uncompressed and %d compressed, want a sealed one of each and the newest uncompressed", plain, packed)
	}
	kv, err := env.Bus.JetStream().KeyValue(testCtx(t), subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys {
		hist, err := kv.History(testCtx(t), fmt.Sprintf("%s.w%d", tenant, k))
		if err != nil {
			t.Fatalf("history of w%d: %v", k, err)
		}
		if len(hist) != revs {
			t.Fatalf("w%d has %d revisions, want %d", k, len(hist), revs)
		}
		for r, e := range hist {
			if !bytes.Equal(e.Value(), value(k, r)) {
				t.Fatalf("w%d revision %d reads %.60q…, want %.60q…", k, r, e.Value(), value(k, r))
			}
		}
	}
	if n := streamMsgs(t, env, subjects.StreamEvents); n != 2 {
		t.Errorf("%s holds %d events, want 2", subjects.StreamEvents, n)
	}
}

// blocks counts a stream's message block files on disk by whether the
// server compressed them (they begin "cmp" and the algorithm, 1 for S2).
func blocks(t testing.TB, dir, stream string) (plain, packed int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", stream, "msgs", "*.blk"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 4 && string(b[:3]) == "cmp" && b[3] == 1 {
			packed++
		} else {
			plain++
		}
	}
	return plain, packed
}
