package retention_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/retention"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// world is one test's server with the stores a workflow leaves pieces in.
type world struct {
	t        *testing.T
	env      *bustest.Env
	cps      *bus.KV
	sessions *sessions.Store
	// payloads holds the references of what seed stored, by workflow id.
	payloads map[string][]events.PayloadRef
}

func newWorld(t *testing.T) *world {
	t.Helper()
	env := bustest.New(t)
	cps, err := env.Bus.KV(t.Context(), subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sessions.New(sessions.Config{Bus: env.Bus, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, env: env, cps: cps, sessions: st, payloads: map[string][]events.PayloadRef{}}
}

// wf describes a workflow to seed.
type wf struct {
	tenant, id string
	status     events.State
	session    string // a turn of this session ("": none)
	upload     bool   // an ingest workflow with an upload left
	payloads   int    // large payloads it stored (AGENTBUS_PAYLOADS)
	revisions  int    // checkpoint revisions (at least 1)
	events     int    // events in its log
}

// seed writes what a workflow like w leaves: checkpoint revisions (the
// last with w's status), events, a control record, a session turn and an
// upload.
func (x *world) seed(ctx context.Context, w wf) {
	t := x.t
	t.Helper()
	cp := workflow.Checkpoint{TenantID: w.tenant, WorkflowID: w.id, Query: "what is " + w.id, Status: events.StateWorking,
		Phase: workflow.PhaseExecuting, Metadata: map[string]string{}, CreatedAt: time.Now().UTC()}
	if w.upload {
		cp.Metadata["upload"] = "up-" + w.id
		name, _ := bus.UploadName(w.tenant, "up-"+w.id, 0)
		if _, err := x.env.Bus.PutUpload(ctx, name, bytes.NewReader(bytes.Repeat([]byte("x"), 4096))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range w.payloads {
		base := events.StepKey(w.tenant, w.id, fmt.Sprintf("s%d", i), 1)
		ref, err := x.env.Bus.PutPayload(ctx, base, "output", bus.ContentTypeJSON, bytes.Repeat([]byte("7"), 300<<10))
		if err != nil {
			t.Fatal(err)
		}
		x.payloads[w.id] = append(x.payloads[w.id], ref)
	}
	if w.session != "" {
		cp.Session = &workflow.SessionState{ID: w.session}
		if _, err := x.sessions.Append(ctx, w.tenant, "", w.session, events.Turn{WorkflowID: w.id, Query: cp.Query, Answer: "an answer about " + w.id,
			Status: w.status}); err != nil {
			t.Fatal(err)
		}
	}
	key, _ := subjects.CheckpointKey(w.tenant, w.id)
	for i := range max(1, w.revisions) {
		if i == max(1, w.revisions)-1 {
			cp.Status, cp.Phase = w.status, workflow.PhaseDone
			if !w.status.Terminal() {
				cp.Phase = workflow.PhaseExecuting
			}
		}
		cp.EventCount = i
		b, _ := json.Marshal(cp)
		if _, err := x.cps.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	subj, _ := subjects.Events(w.tenant, w.id)
	js := x.env.Bus.JetStream()
	for i := range w.events {
		if _, err := js.PublishAsync(subj, fmt.Appendf(nil, `{"type":"progress","n":%d,"pad":%q}`, i, bytes.Repeat([]byte("p"), 200))); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	ctl, _ := x.env.Bus.KV(ctx, subjects.BucketControl)
	if _, err := ctl.Put(ctx, key, []byte(`{"action":"cancel"}`)); err != nil {
		t.Fatal(err)
	}
}

// left says what of a workflow is still stored.
type left struct {
	checkpoint, events, control, turn, upload, payload bool
}

func (x *world) left(ctx context.Context, w wf) left {
	t := x.t
	t.Helper()
	var l left
	key, _ := subjects.CheckpointKey(w.tenant, w.id)
	if h, err := x.cps.History(ctx, key); err == nil && len(h) > 0 {
		l.checkpoint = true
	} else if err != nil && !errors.Is(err, bus.ErrNotFound) {
		t.Fatal(err)
	}
	subj, _ := subjects.Events(w.tenant, w.id)
	n, err := x.env.Bus.Stored(ctx, subjects.StreamEvents, subj)
	if err != nil {
		t.Fatal(err)
	}
	l.events = n > 0
	ctl, _ := x.env.Bus.KV(ctx, subjects.BucketControl)
	_, err = ctl.Get(ctx, key)
	l.control = err == nil
	if w.session != "" {
		s, err := x.sessions.Load(ctx, w.tenant, "", w.session)
		if err != nil && !errors.Is(err, sessions.ErrNotFound) {
			t.Fatal(err)
		}
		for _, turn := range s.Turns {
			l.turn = l.turn || turn.WorkflowID == w.id
		}
	}
	if w.upload {
		names, err := x.env.Bus.ListUploads(ctx, w.tenant)
		if err != nil {
			t.Fatal(err)
		}
		l.upload = len(names) > 0
	}
	for _, ref := range x.payloads[w.id] {
		_, err := x.env.Bus.GetPayload(ctx, w.tenant, ref)
		if err != nil && !errors.Is(err, bus.ErrNotFound) {
			t.Fatal(err)
		}
		l.payload = l.payload || err == nil
	}
	return l
}

// sweeper makes a sweeper whose clock reads *now.
func (x *world) sweeper(p retention.Policy, now *time.Time, tweak ...func(*retention.Config)) *retention.Sweeper {
	x.t.Helper()
	cfg := retention.Config{Bus: x.env.Bus, Policy: p, Sessions: x.sessions, Logger: bustest.Logger(x.t), Now: func() time.Time { return *now }}
	for _, f := range tweak {
		f(&cfg)
	}
	s, err := retention.New(x.t.Context(), cfg)
	if err != nil {
		x.t.Fatal(err)
	}
	return s
}
