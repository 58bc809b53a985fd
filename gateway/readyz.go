package gateway

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/subjects"
)

// Readiness is the answer of GET /readyz.
type Readiness struct {
	// Status is "ready" (200) or "not ready" (503).
	Status string `json:"status"`
	// Missing names what is not there, each with the reason: "NATS
	// connection", "stream AGENTBUS_STEPS (…)", "bucket AGENTBUS_AGENTS (…)".
	Missing []string `json:"missing,omitempty"`
}

// readyTimeout bounds one readiness check, all of its look-ups together.
const readyTimeout = 3 * time.Second

// readyz answers GET /readyz (open without a token, like /healthz): 200 when
// the gateway can serve, i.e. NATS is connected, every stream and bucket
// of DESIGN.md §2 exists with the events stream's epoch and, on a
// cluster, this server's replicas of them are current; else 503 naming
// what is missing. /healthz only says the process is alive and connected.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	missing := g.missing(r.Context())
	if len(missing) > 0 {
		// The API's error beside status and missing: a client that reads
		// every 5xx the one way (error.code, error.message) reads this too.
		writeJSON(w, http.StatusServiceUnavailable, struct {
			Readiness
			Error apiError `json:"error"`
		}{Readiness{Status: "not ready", Missing: missing}, apiError{Code: "unavailable", Message: "not ready: missing " + strings.Join(missing, ", ")}})
		return
	}
	writeJSON(w, http.StatusOK, Readiness{Status: "ready"})
}

// missing lists what the gateway needs and cannot find.
func (g *Gateway) missing(ctx context.Context) []string {
	if !g.bus.Conn().IsConnected() {
		return []string{"NATS connection (" + g.bus.Conn().Status().String() + ")"}
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var out []string
	epoch, err := g.bus.Epoch(ctx)
	switch {
	case err != nil:
		out = append(out, "stream "+subjects.StreamEvents+" ("+err.Error()+")")
	case epoch == "":
		out = append(out, "stream "+subjects.StreamEvents+" has no epoch (metadata "+bus.EpochKey+")")
	}
	for _, name := range []string{subjects.StreamWorkflows, subjects.StreamSteps, subjects.StreamReplies, subjects.StreamDeadLetter} {
		if _, err := g.bus.JetStream().Stream(ctx, name); err != nil {
			out = append(out, "stream "+name+" ("+err.Error()+")")
		}
	}
	for _, name := range []string{subjects.BucketCheckpoints, subjects.BucketAgents, subjects.BucketControl} {
		if _, err := g.bus.KV(ctx, name); err != nil {
			out = append(out, "bucket "+name+" ("+err.Error()+")")
		}
	}
	if len(out) > 0 {
		return out
	}
	// On a cluster, a server restarted on its store is ready once its own
	// replicas have caught up: a rolling restart waits for this before it
	// takes the next node down, so that two replicas of every stream are
	// always current.
	for _, name := range []string{subjects.StreamWorkflows, subjects.StreamSteps, subjects.StreamReplies, subjects.StreamEvents, subjects.StreamTimers,
		"KV_" + subjects.BucketCheckpoints, "KV_" + subjects.BucketControl} {
		if why, err := g.bus.CatchingUp(ctx, name); err == nil && why != "" {
			out = append(out, "stream "+name+" ("+why+")")
		}
	}
	return out
}
