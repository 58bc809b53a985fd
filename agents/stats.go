package agents

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbus/agentbus/bus"
)

// stats are one agent's live counters in one worker. Safe for concurrent use.
type stats struct {
	inFlight  atomic.Int64
	processed atomic.Uint64
	errors    atomic.Uint64
	totalNS   atomic.Int64
	// consecutive counts failures since the last success: five in a row
	// make the instance report itself unhealthy.
	consecutive atomic.Int64
	mu          sync.Mutex
	lastErr     string
}

// unhealthyAfter is how many consecutive step failures mark an agent unhealthy.
const unhealthyAfter = 5

func (s *stats) begin() time.Time { s.inFlight.Add(1); return time.Now() }

// end counts a step that ran from start: a failure if err is set, unless
// canceled — a step stopped because its workflow was canceled did what was
// asked of it, so it is neither a failure nor a success that would reset
// the failure streak.
func (s *stats) end(start time.Time, err error, canceled bool) {
	s.inFlight.Add(-1)
	s.processed.Add(1)
	s.totalNS.Add(int64(time.Since(start)))
	if canceled {
		return
	}
	if err != nil {
		s.errors.Add(1)
		s.consecutive.Add(1)
		s.mu.Lock()
		s.lastErr = err.Error()
		s.mu.Unlock()
		return
	}
	s.consecutive.Store(0)
}

// Snapshot is an agent's counters at one moment.
type Snapshot struct {
	InFlight  int64   `json:"in_flight"`
	Processed uint64  `json:"processed"`
	Errors    uint64  `json:"errors"`
	AvgMS     float64 `json:"avg_ms"`
	// Failing is set after five consecutive failures, with the last error.
	Failing string `json:"failing,omitempty"`
}

func (s *stats) snapshot() Snapshot {
	out := Snapshot{InFlight: s.inFlight.Load(), Processed: s.processed.Load(), Errors: s.errors.Load()}
	if out.Processed > 0 {
		out.AvgMS = float64(s.totalNS.Load()) / float64(out.Processed) / 1e6
	}
	if s.consecutive.Load() >= unhealthyAfter {
		s.mu.Lock()
		out.Failing = s.lastErr
		s.mu.Unlock()
	}
	return out
}

// endpoint is the agent's counters as its micro endpoint reports them:
// requests are steps run, errors the ones that failed, processing time
// the time spent running them; data the Snapshot.
func (s *stats) endpoint() bus.EndpointStats {
	s.mu.Lock()
	last := s.lastErr
	s.mu.Unlock()
	return bus.EndpointStats{Requests: int(s.processed.Load()), Errors: int(s.errors.Load()), LastError: last,
		ProcessingTime: time.Duration(s.totalNS.Load()), Data: s.snapshot()}
}
