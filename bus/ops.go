package bus

import "sync/atomic"

// Ops counts what a Bus asked of JetStream, for measuring what one step
// costs (BenchmarkStepCost): messages published, KV reads and writes,
// look-ups (stream and consumer info, stored messages), consumed messages
// answered (ack, nak, term), and waits — the round trips a caller waited
// for in series (one per Publish, KV call or look-up; one per wave of a
// PublishAll, however many messages it holds). Reading it is safe for
// concurrent use; it costs an atomic add per operation.
type Ops struct {
	Published, KVReads, KVWrites, Lookups, Answered, Waits int64
}

// Sub returns o − p: what happened between two readings.
func (o Ops) Sub(p Ops) Ops {
	return Ops{Published: o.Published - p.Published, KVReads: o.KVReads - p.KVReads, KVWrites: o.KVWrites - p.KVWrites,
		Lookups: o.Lookups - p.Lookups, Answered: o.Answered - p.Answered, Waits: o.Waits - p.Waits}
}

// ops are a Bus's counters.
type ops struct {
	published, kvReads, kvWrites, lookups, answered, waits atomic.Int64
}

// Ops returns what the Bus (and the KV buckets it opened) did so far.
func (b *Bus) Ops() Ops {
	o := b.ops
	if o == nil {
		return Ops{}
	}
	return Ops{Published: o.published.Load(), KVReads: o.kvReads.Load(), KVWrites: o.kvWrites.Load(),
		Lookups: o.lookups.Load(), Answered: o.answered.Load(), Waits: o.waits.Load()}
}

// publish notes n messages published with one wait.
func (o *ops) publish(n int) {
	if o == nil {
		return
	}
	o.published.Add(int64(n))
	o.waits.Add(1)
}

func (o *ops) read() {
	if o == nil {
		return
	}
	o.kvReads.Add(1)
	o.waits.Add(1)
}

func (o *ops) write() {
	if o == nil {
		return
	}
	o.kvWrites.Add(1)
	o.waits.Add(1)
}

func (o *ops) lookup() {
	if o == nil {
		return
	}
	o.lookups.Add(1)
	o.waits.Add(1)
}

func (o *ops) answer() {
	if o == nil {
		return
	}
	o.answered.Add(1)
}

// waited notes a wait for what was published earlier (Publishing.Wait).
func (o *ops) waited() {
	if o == nil {
		return
	}
	o.waits.Add(1)
}

// sent notes n messages published whose wait comes later, if at all
// (PublishAllAsync).
func (o *ops) sent(n int) {
	if o == nil {
		return
	}
	o.published.Add(int64(n))
}
