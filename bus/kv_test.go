package bus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

func openCheckpoints(t *testing.T) (*bus.KV, string) {
	t.Helper()
	env := bustest.New(t)
	kv, err := env.Bus.KV(testCtx(t), subjects.BucketCheckpoints)
	if err != nil {
		t.Fatalf("open %s: %v", subjects.BucketCheckpoints, err)
	}
	key, err := subjects.CheckpointKey(tenant, "w1")
	if err != nil {
		t.Fatal(err)
	}
	return kv, key
}

func TestKVCreateTwiceConflicts(t *testing.T) {
	t.Parallel()
	kv, key := openCheckpoints(t)
	rev, err := kv.Create(testCtx(t), key, []byte("v1"))
	if err != nil || rev == 0 {
		t.Fatalf("first Create = %d, %v", rev, err)
	}
	if _, err := kv.Create(testCtx(t), key, []byte("v2")); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("second Create: err = %v, want ErrConflict", err)
	}
	e, err := kv.Get(testCtx(t), key)
	if err != nil || string(e.Value) != "v1" || e.Revision != rev || e.Key != key {
		t.Fatalf("Get after conflicting Create = %+v, %v; want v1 at revision %d", e, err, rev)
	}
}

func TestKVUpdate(t *testing.T) {
	t.Parallel()
	kv, key := openCheckpoints(t)
	r1, err := kv.Create(testCtx(t), key, []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := kv.Update(testCtx(t), key, []byte("v2"), r1)
	if err != nil || r2 <= r1 {
		t.Fatalf("Update at the current revision = %d, %v; want a revision after %d", r2, err, r1)
	}
	if _, err := kv.Update(testCtx(t), key, []byte("stale"), r1); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("Update at stale revision %d: err = %v, want ErrConflict", r1, err)
	}
	if _, err := kv.Update(testCtx(t), "acme.never-created", []byte("x"), 1); !errors.Is(err, bus.ErrConflict) {
		t.Errorf("Update of a missing key: err = %v, want ErrConflict", err)
	}
	e, err := kv.Get(testCtx(t), key)
	if err != nil || string(e.Value) != "v2" || e.Revision != r2 {
		t.Fatalf("Get = %+v, %v; want v2 at revision %d", e, err, r2)
	}
	e, err = kv.GetFresh(testCtx(t), key)
	if err != nil || string(e.Value) != "v2" || e.Revision != r2 {
		t.Fatalf("GetFresh = %+v, %v; want v2 at revision %d", e, err, r2)
	}
}

func TestKVGetMissing(t *testing.T) {
	t.Parallel()
	kv, key := openCheckpoints(t)
	if _, err := kv.Get(testCtx(t), key); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("Get of a missing key: err = %v, want ErrNotFound", err)
	}
	if _, err := kv.GetFresh(testCtx(t), key); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("GetFresh of a missing key: err = %v, want ErrNotFound", err)
	}
	if _, err := kv.History(testCtx(t), key); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("History of a missing key: err = %v, want ErrNotFound", err)
	}
}

func TestKVHistoryOldestFirst(t *testing.T) {
	t.Parallel()
	kv, key := openCheckpoints(t)
	var revs []uint64
	rev, err := kv.Create(testCtx(t), key, []byte("v0"))
	if err != nil {
		t.Fatal(err)
	}
	revs = append(revs, rev)
	for i := 1; i < 5; i++ {
		if i%2 == 0 {
			rev, err = kv.Put(testCtx(t), key, []byte(fmt.Sprintf("v%d", i)))
		} else {
			rev, err = kv.Update(testCtx(t), key, []byte(fmt.Sprintf("v%d", i)), rev)
		}
		if err != nil {
			t.Fatalf("write v%d: %v", i, err)
		}
		revs = append(revs, rev)
	}
	hs, err := kv.History(testCtx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	var gotRevs []uint64
	var gotVals []string
	for _, e := range hs {
		gotRevs = append(gotRevs, e.Revision)
		gotVals = append(gotVals, string(e.Value))
		if e.Key != key {
			t.Errorf("history entry key %q, want %q", e.Key, key)
		}
	}
	if !slices.Equal(gotRevs, revs) {
		t.Errorf("History revisions = %v, want %v", gotRevs, revs)
	}
	if want := []string{"v0", "v1", "v2", "v3", "v4"}; !slices.Equal(gotVals, want) {
		t.Errorf("History values = %q, want %q", gotVals, want)
	}
}

func TestKVDeletedKeyIsNotFound(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	kv, err := env.Bus.KV(testCtx(t), subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := subjects.CheckpointKey(tenant, "w1")
	if _, err := kv.Put(testCtx(t), key, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(testCtx(t), key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := kv.Get(testCtx(t), key); !errors.Is(err, bus.ErrNotFound) {
		t.Errorf("Get of a deleted key: err = %v, want ErrNotFound", err)
	}
	hs, err := kv.History(testCtx(t), key)
	if err != nil || len(hs) != 1 || string(hs[0].Value) != "v1" {
		t.Errorf("History of a deleted key = %+v, %v; want only the put v1", hs, err)
	}
	if _, err := kv.Create(testCtx(t), key, []byte("v2")); err != nil {
		t.Errorf("Create over a deleted key: %v, want it allowed", err)
	}
}

func TestKVMissingBucket(t *testing.T) {
	t.Parallel()
	env := bustest.NewWithOptions(t, bustest.Options{NoProvision: true})
	if _, err := env.Bus.KV(testCtx(t), subjects.BucketCheckpoints); err == nil {
		t.Fatalf("KV(%s) on an unprovisioned server succeeded", subjects.BucketCheckpoints)
	}
}

func TestKVList(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	kv, err := env.Bus.KV(testCtx(t), subjects.BucketControl)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := kv.List(testCtx(t)); err != nil || len(got) != 0 {
		t.Fatalf("List of an empty bucket = %+v, %v; want nothing", got, err)
	}
	for _, wf := range []string{"w3", "w1", "w2"} {
		key, _ := subjects.CheckpointKey(tenant, wf)
		if _, err := kv.Put(testCtx(t), key, []byte(wf)); err != nil {
			t.Fatal(err)
		}
	}
	gone, _ := subjects.CheckpointKey(tenant, "w2")
	if err := kv.Delete(testCtx(t), gone); err != nil {
		t.Fatal(err)
	}
	got, err := kv.List(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Key+"="+string(e.Value))
	}
	if want := []string{"acme.w1=w1", "acme.w3=w3"}; !slices.Equal(keys, want) {
		t.Errorf("List = %q, want %q (key order, deleted keys left out)", keys, want)
	}
}

func TestKVWait(t *testing.T) {
	t.Parallel()
	kv, key := openCheckpoints(t)
	got := make(chan bus.Entry, 1)
	errs := make(chan error, 1)
	go func() {
		e, err := kv.Wait(testCtx(t), key)
		got <- e
		errs <- err
	}()
	rev, err := kv.Create(testCtx(t), key, []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	e := recv(t, got, "Wait's entry")
	if err := <-errs; err != nil || string(e.Value) != "v1" || e.Revision != rev || e.Key != key {
		t.Fatalf("Wait = %+v, %v; want v1 at revision %d", e, err, rev)
	}
	// An existing key is returned at once.
	if e, err := kv.Wait(testCtx(t), key); err != nil || string(e.Value) != "v1" {
		t.Fatalf("Wait on an existing key = %+v, %v", e, err)
	}
	// A key that never comes ends with the context.
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	if _, err := kv.Wait(ctx, "acme.never"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait for a key that never comes = %v, want context.DeadlineExceeded", err)
	}
}

func TestKVPutTTLExpires(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	kv, err := env.Bus.KV(testCtx(t), subjects.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	rev, err := kv.PutTTL(testCtx(t), "echo.w1", []byte("alive"), 10*time.Millisecond) // rounded up to 1s
	if err != nil || rev == 0 {
		t.Fatalf("PutTTL = %d, %v", rev, err)
	}
	if e, err := kv.Get(testCtx(t), "echo.w1"); err != nil || string(e.Value) != "alive" || e.Revision != rev {
		t.Fatalf("Get right after PutTTL = %+v, %v; want alive at revision %d", e, err, rev)
	}
	eventually(t, func() (bool, string) {
		_, err := kv.Get(testCtx(t), "echo.w1")
		return errors.Is(err, bus.ErrNotFound), fmt.Sprintf("Get = %v, want ErrNotFound once the TTL passed", err)
	})
	if d := time.Since(begin); d < 800*time.Millisecond {
		t.Errorf("key expired after %s, want about 1s (TTL rounded up to whole seconds)", d)
	}
}

func TestKVWatchDone(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	other := bustest.Connect(t, env)
	kv, err := env.Bus.KV(testCtx(t), subjects.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(testCtx(t), "before", []byte("b")); err != nil {
		t.Fatal(err)
	}
	type change struct {
		key, value string
		deleted    bool
	}
	changes := make(chan change, 16)
	fn := func(e bus.Entry, deleted bool) { changes <- change{e.Key, string(e.Value), deleted} }

	ctx, cancel := context.WithCancel(testCtx(t))
	done, err := kv.WatchDone(ctx, fn)
	if err != nil {
		t.Fatal(err)
	}
	// The existing key is delivered before WatchDone returns.
	select {
	case c := <-changes:
		if c != (change{"before", "b", false}) {
			t.Fatalf("first change %+v, want the existing key", c)
		}
	default:
		t.Fatal("WatchDone returned before delivering the existing key")
	}
	if _, err := kv.PutTTL(testCtx(t), "short", []byte("s"), time.Second); err != nil {
		t.Fatal(err)
	}
	if c := recv(t, changes, "the put"); c != (change{"short", "s", false}) {
		t.Fatalf("change %+v, want the put of short", c)
	}
	if c := recv(t, changes, "the expiry"); c.key != "short" || !c.deleted {
		t.Fatalf("change %+v, want short deleted when its TTL passed", c)
	}
	cancel()
	recv(t, done, "the end of the watch after its context ended")

	// A watch whose connection closes ends too, with its context still live.
	okv, err := other.KV(testCtx(t), subjects.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	done, err = okv.WatchDone(testCtx(t), func(bus.Entry, bool) {})
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	recv(t, done, "the end of the watch after its connection closed")
}

func TestReconnected(t *testing.T) {
	t.Parallel()
	dir, addr := t.TempDir(), bustest.FreeAddr(t)
	start := func() *broker.Server {
		srv, err := broker.Start(broker.Config{DataDir: dir, Addr: addr})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	stop := func(srv *broker.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	srv := start()
	b, err := bus.Connect(testCtx(t), bus.Config{URL: "nats://" + addr, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ch := b.Reconnected(testCtx(t))
	select {
	case <-ch:
		t.Fatal("Reconnected fired without a reconnect")
	default:
	}
	stop(srv)
	srv = start()
	defer stop(srv)
	recv(t, ch, "the reconnect signal after the server restarted")
}
