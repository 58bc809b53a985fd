package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/subjects"
)

// A read of stored events asks for at most readBatch of them, or about
// readBatchBytes, in one direct get, and gives up on an answer that
// stops for readWait.
const (
	readBatch      = 256
	readBatchBytes = 1 << 20
	readWait       = 5 * time.Second
	// headerNumPending is how many more messages matched the read when
	// the server sent this one.
	headerNumPending = "Nats-Num-Pending"
)

// readEvents reads the events stored on subj from sequence from on, up to
// readBatch of them, with one batched direct get (any replica of the
// events stream answers it), and hands each to fn in order with how
// many more the stream held on subj when it was read; fn returning false
// stops the hand-over (the rest of the answer is read and dropped). It
// returns how many fn was given: 0 when the answering server has none.
func (b *Bus) readEvents(ctx context.Context, subj string, from uint64, fn func(seq, pending uint64, h nats.Header, data []byte) bool) (int, error) {
	inbox := b.nc.NewInbox()
	sub, err := b.nc.SubscribeSync(inbox)
	if err != nil {
		return 0, fmt.Errorf("bus: read %s: %w", subj, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, _ := json.Marshal(struct {
		Seq      uint64 `json:"seq"`
		NextFor  string `json:"next_by_subj"`
		Batch    int    `json:"batch"`
		MaxBytes int    `json:"max_bytes"`
	}{from, subj, readBatch, readBatchBytes})
	if err := b.nc.PublishRequest("$JS.API.DIRECT.GET."+subjects.StreamEvents, inbox, req); err != nil {
		return 0, fmt.Errorf("bus: read %s: %w", subj, err)
	}
	n, taking := 0, true
	for {
		wctx, cancel := context.WithTimeout(ctx, readWait)
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			return n, fmt.Errorf("bus: read %s from %d: %w", subj, from, err)
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "204", "404": // end of the batch; none at all
			return n, nil
		default:
			return n, fmt.Errorf("bus: read %s from %d: %s %s", subj, from, status, m.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(m.Header.Get(nats.JSSequence), 10, 64)
		if err != nil {
			return n, fmt.Errorf("bus: read %s from %d: an answer without a sequence", subj, from)
		}
		pending, _ := strconv.ParseUint(m.Header.Get(headerNumPending), 10, 64)
		if taking {
			taking = fn(seq, pending, m.Header, m.Data)
			n++
		}
	}
}
