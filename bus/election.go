package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A stream on a cluster answers nothing for a few seconds while it elects
// a leader after a node loss: a publish meets "no responders" (nobody
// listens on the subject yet), "no response from stream" (nats.go's name
// for the same after its own two quick retries), a timeout (the replicas
// that are left hear it but none leads), or a 503 "JetStream system
// temporarily unavailable". None of them means the message was refused;
// every publish of agentbus carries a Nats-Msg-Id, so the same message
// sent again once a leader answers is stored once. So a publish tries
// again, with backoff, until its context ends (or, without a deadline,
// for ElectionWait), and only then hands the error on: an election is
// invisible to the caller unless it outlasts the caller's patience.

// DefaultElectionWait is Config.ElectionWait's default: longer than the
// 2–5 s an R3 stream takes to elect a leader after a node loss on a
// healthy network, short enough that a caller without a deadline learns
// of a real outage.
const DefaultElectionWait = 15 * time.Second

// electionAttempt bounds one attempt while retrying, so that a request
// that went to a leader that just died is sent again to the next one
// instead of waiting out nats.go's 5 s default.
const electionAttempt = 2 * time.Second

// Transient reports whether err is a stream or service that has no leader
// or responder for the moment (see the comment above), as opposed to a
// refusal: a caller may try again with the same dedup id.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// 503: JetStream system temporarily unavailable, no suitable
		// peers; 408: a request the meta layer timed out; 10158: the same
		// message id is still being stored (an earlier try whose answer
		// did not come in time) — the next try gets its acknowledgement.
		return apiErr.Code == 503 || apiErr.Code == 408 || apiErr.ErrorCode == jsErrDuplicateInProcess
	}
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// jsErrDuplicateInProcess is nats-server's code (errors.json) for
// "duplicate message id is in process".
const jsErrDuplicateInProcess = 10158

// retryElection calls attempt until it succeeds, fails with an error that
// is not Transient, or the retry window ends: ctx's deadline, or wait from
// now when ctx has none. Each attempt gets at most electionAttempt (or
// what is left of the window). It returns the last error, and reports the
// attempts it took through retried (for the log and metrics).
func retryElection(ctx context.Context, wait time.Duration, attempt func(ctx context.Context) error) (retried int, err error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(wait)
	}
	backoff := 50 * time.Millisecond
	for {
		until := time.Now().Add(electionAttempt)
		if deadline.Before(until) {
			until = deadline
		}
		actx, cancel := context.WithDeadline(ctx, until)
		err = attempt(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !Transient(err) {
			if ctx.Err() != nil && err != nil && !errors.Is(err, ctx.Err()) {
				err = errors.Join(err, ctx.Err())
			}
			return retried, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return retried, err
		}
		select {
		case <-ctx.Done():
			return retried, errors.Join(err, ctx.Err())
		case <-time.After(min(backoff, left)):
		}
		backoff = min(2*backoff, time.Second)
		retried++
	}
}
