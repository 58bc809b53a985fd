package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentbus/agentbus/bus/bustest"
)

// churn drives reconnects clients against one workflow that emits events at
// a steady rate until the clients have reconnected that many times, then
// ends it. Each client keeps its last offset, drops its connection at
// random moments (after a random number of events, at a random time, or
// right after connecting; closing politely or not) and resumes from that
// offset. Every client must end up with exactly the published events: no
// gap, no duplicate, no reordering.
type churn struct {
	t        *testing.T
	s        *stack
	workflow string
	clients  int
	// session reads one connection from cursor last (0: none yet) and
	// passes every event frame's offset to got until it has taken take of
	// them (-1: to the end) or until ctx ends. It reports whether the
	// terminal event came.
	session func(ctx context.Context, last uint64, take int, got func(off uint64, typ string) error) (bool, error)
}

func (c churn) run(reconnects int) {
	t := c.t
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	bareWorkflow(t, c.s.env, c.workflow, "working")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var conns atomic.Int64 // connections opened after each client's first
	var published []uint64
	pubErr := make(chan error, 1)
	go func() {
		// About 500 events/s, until the reconnects are done.
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			final := conns.Load() >= int64(reconnects)
			off, err := publishEvent(ctx, c.s.env, c.workflow, n, final, 0)
			if err != nil {
				pubErr <- err
				return
			}
			published = append(published, off)
			if final {
				pubErr <- nil
				return
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				pubErr <- ctx.Err()
				return
			}
		}
	}()

	got := make([][]uint64, c.clients)
	errs := make([]error, c.clients)
	var wg sync.WaitGroup
	for i := range c.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			var last uint64
			record := func(off uint64, typ string) error {
				if off <= last {
					return fmt.Errorf("client %d: offset %d after %d (duplicate or reordered)", i, off, last)
				}
				last = off
				got[i] = append(got[i], off)
				return nil
			}
			for first := true; ; first = false {
				if !first && conns.Add(1) > int64(reconnects) {
					// Budget spent: read to the end in one go.
					if _, err := c.session(ctx, last, -1, record); err != nil {
						errs[i] = err
					}
					return
				}
				take, sctx, scancel := rng.IntN(12), ctx, context.CancelFunc(func() {})
				switch rng.IntN(4) {
				case 0: // right after connecting
					take = 0
				case 1: // at a random moment, mid-read
					take = -1
					sctx, scancel = context.WithTimeout(ctx, time.Duration(rng.IntN(8000))*time.Microsecond)
				}
				done, err := c.session(sctx, last, take, record)
				scancel()
				if err != nil {
					errs[i] = err
					return
				}
				if done {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := <-pubErr; err != nil {
		t.Fatalf("publisher: %v", err)
	}
	if n := conns.Load(); n < int64(reconnects) {
		t.Fatalf("only %d reconnects", n)
	}
	want := fmt.Sprint(published)
	for i := range c.clients {
		if errs[i] != nil {
			t.Errorf("client %d: %v", i, errs[i])
			continue
		}
		if g := fmt.Sprint(got[i]); g != want {
			t.Errorf("client %d got %d events, want the %d published (first difference at %d)", i, len(got[i]), len(published), firstDiff(got[i], published))
		}
	}
	t.Logf("%d events, %d clients, %d reconnects", len(published), c.clients, conns.Load())
}

func firstDiff(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestWSReconnectStorm(t *testing.T) {
	s := startGateway(t, bustest.New(t))
	var epoch atomic.Value
	churn{t: t, s: s, workflow: "storm", clients: 8, session: func(ctx context.Context, last uint64, take int, got func(uint64, string) error) (bool, error) {
		path := "/v1/workflows/storm/ws"
		if last > 0 {
			path += "?from=" + strconv.FormatUint(last, 10) + "&epoch=" + epoch.Load().(string)
		}
		c, _, err := s.dialWS(ctx, path)
		if err != nil {
			if ctx.Err() != nil {
				return false, nil // dropped at a random moment
			}
			return false, err
		}
		defer func() { _ = c.CloseNow() }()
		n, done := 0, false
		st, err := readWS(ctx, c, func(f wsFrame) error {
			switch {
			case f.Type == "connected":
				var cd connected
				if err := json.Unmarshal(f.Data, &cd); err != nil || *cd.From != last {
					return fmt.Errorf("connected %s, want from %d", f.Data, last)
				}
				epoch.Store(cd.Epoch)
			case f.Offset == 0:
				return fmt.Errorf("unexpected %s frame %s", f.Type, f.Data)
			default:
				if err := got(f.Offset, f.Type); err != nil {
					return err
				}
				n++
				done = terminal(f.Type)
			}
			if take >= 0 && n >= take && !done {
				return errStopReading
			}
			return nil
		})
		switch {
		case err != nil:
			return done, err
		case done:
			if st.CloseCode() != websocket.StatusNormalClosure && ctx.Err() == nil {
				return true, fmt.Errorf("after the terminal frame: %v, want a normal close", st.End)
			}
			return true, nil
		case st.End == nil: // took its share: hang up, politely half the time
			if n%2 == 0 {
				_ = c.Close(websocket.StatusNormalClosure, "bye")
			}
			return false, nil
		case ctx.Err() != nil:
			return false, nil // dropped at a random moment
		default:
			return false, fmt.Errorf("connection ended early: %v", st.End)
		}
	}}.run(1000)
}

func TestSSEReconnectStorm(t *testing.T) {
	s := startGateway(t, bustest.New(t))
	churn{t: t, s: s, workflow: "ssestorm", clients: 8, session: func(ctx context.Context, last uint64, take int, got func(uint64, string) error) (bool, error) {
		var header []string
		if last > 0 {
			header = []string{"Last-Event-ID", strconv.FormatUint(last, 10)}
		}
		n, done := 0, false
		st, err := s.readSSE(ctx, "/v1/workflows/ssestorm/events", func(sf sseFrame, _ []string) error {
			if sf.Event == "" {
				return nil // a keepalive
			}
			if sf.Event == "connected" {
				var cd connected
				if err := json.Unmarshal([]byte(sf.Data), &cd); err != nil || *cd.From != last {
					return fmt.Errorf("connected %s, want from %d", sf.Data, last)
				}
				return nil
			}
			var f frame
			if err := json.Unmarshal([]byte(sf.Data), &f); err != nil || sf.ID != strconv.FormatUint(f.Offset, 10) {
				return fmt.Errorf("frame id %s data %s: %v", sf.ID, sf.Data, err)
			}
			if err := got(f.Offset, f.Type); err != nil {
				return err
			}
			n++
			done = terminal(f.Type)
			if take >= 0 && n >= take && !done {
				return errStopReading
			}
			return nil
		}, header...)
		if ctx.Err() != nil {
			return done, nil // dropped at a random moment
		}
		if err == nil && st.Status != 200 {
			err = fmt.Errorf("status %d: %s", st.Status, st.Body)
		}
		return done, err
	}}.run(1000)
}
