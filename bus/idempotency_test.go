package bus_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// TestIdempotencyBucket: the bucket is made on first use, with a day's
// TTL; of concurrent claims of a key exactly one stores, and every other
// gets its value.
func TestIdempotencyBucket(t *testing.T) {
	env := bustest.New(t)
	kv, err := env.Bus.Idempotency(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := env.Bus.JetStream().KeyValue(testCtx(t), subjects.BucketIdempotency)
	if err != nil {
		t.Fatal(err)
	}
	status, err := st.Status(testCtx(t))
	if err != nil || status.TTL() != bus.IdempotencyTTL || status.History() != 1 {
		t.Fatalf("bucket status %+v, %v; want TTL %s and one revision", status, err, bus.IdempotencyTTL)
	}
	if again, err := env.Bus.Idempotency(testCtx(t)); err != nil || again == nil {
		t.Fatalf("opening it again: %v", err)
	}
	if held, err := kv.Claimed(testCtx(t), "acme.k"); held != nil || err != nil {
		t.Fatalf("Claimed of a new key = %q, %v", held, err)
	}
	const n = 16
	var wg sync.WaitGroup
	held := make([][]byte, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			held[i], errs[i] = kv.Claim(testCtx(t), "acme.k", []byte{byte('a' + i)})
		}()
	}
	wg.Wait()
	var winner []byte
	won := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if held[i] == nil {
			won++
			winner = []byte{byte('a' + i)}
		}
	}
	if won != 1 {
		t.Fatalf("%d claims stored, want 1", won)
	}
	for i := range n {
		if held[i] != nil && !bytes.Equal(held[i], winner) {
			t.Errorf("claim %d saw %q, the stored value is %q", i, held[i], winner)
		}
	}
	if got, err := kv.Claimed(testCtx(t), "acme.k"); err != nil || !bytes.Equal(got, winner) {
		t.Errorf("Claimed = %q, %v; want %q", got, err, winner)
	}
}

// TestStoredCountsBySubject: Stored counts a stream's messages on the
// subjects a filter matches; a stream that does not exist is ErrNotFound.
func TestStoredCountsBySubject(t *testing.T) {
	env := bustest.New(t)
	js := env.Bus.JetStream()
	for _, subj := range []string{"agentbus.acme.step.a", "agentbus.acme.step.a", "agentbus.acme.step.b", "agentbus.beta.step.a"} {
		if _, err := js.Publish(testCtx(t), subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	steps, _ := subjects.TenantSteps("acme")
	if n, err := env.Bus.Stored(testCtx(t), subjects.StreamSteps, steps); err != nil || n != 3 {
		t.Errorf("Stored(acme's steps) = %d, %v; want 3", n, err)
	}
	if n, err := env.Bus.Stored(testCtx(t), subjects.StreamSteps, "agentbus.gamma.step.*"); err != nil || n != 0 {
		t.Errorf("Stored(gamma's steps) = %d, %v; want 0", n, err)
	}
	if _, err := env.Bus.Stored(testCtx(t), "NO_SUCH_STREAM", ">"); !errors.Is(err, bus.ErrNotFound) {
		t.Errorf("a missing stream: %v, want ErrNotFound", err)
	}
}

// TestUploadBytes sums one tenant's uploads waiting in the store.
func TestUploadBytes(t *testing.T) {
	env := bustest.New(t)
	for _, u := range []struct {
		tenant string
		n      int
	}{{"acme", 10}, {"acme", 5}, {"beta", 7}} {
		name, _ := bus.UploadName(u.tenant, "u1", u.n)
		if _, err := env.Bus.PutUpload(testCtx(t), name, strings.NewReader(strings.Repeat("x", u.n))); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := env.Bus.UploadBytes(testCtx(t), "acme"); err != nil || n != 15 {
		t.Errorf("UploadBytes(acme) = %d, %v; want 15", n, err)
	}
	name, _ := bus.UploadName("acme", "u1", 10)
	if err := env.Bus.DeleteUpload(testCtx(t), name); err != nil {
		t.Fatal(err)
	}
	if n, err := env.Bus.UploadBytes(testCtx(t), "acme"); err != nil || n != 5 {
		t.Errorf("UploadBytes(acme) after a delete = %d, %v; want 5", n, err)
	}
}

// TestDeliveryHeader: a stored delivery gives the headers its message
// was published with.
func TestDeliveryHeader(t *testing.T) {
	d := bus.StoredDelivery(bus.StoredMessage{Subject: "s", Time: time.Now(),
		Header: nats.Header{"Agentbus-Idempotency-Key": {"k1"}}})
	if got := d.Header("Agentbus-Idempotency-Key"); got != "k1" {
		t.Errorf("Header = %q, want k1", got)
	}
	if got := d.Header("Absent"); got != "" {
		t.Errorf("Header(Absent) = %q", got)
	}
}
