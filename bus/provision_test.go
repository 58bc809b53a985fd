package bus_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

func TestProvisionIsIdempotent(t *testing.T) {
	t.Parallel()
	env := bustest.New(t) // provisions once
	for i := range 2 {
		if err := env.Bus.Provision(testCtx(t), bus.StreamsConfig{}); err != nil {
			t.Fatalf("provision #%d on a provisioned server: %v", i+2, err)
		}
	}
	js := env.Bus.JetStream()
	for _, name := range []string{subjects.StreamWorkflows, subjects.StreamSteps, subjects.StreamReplies,
		subjects.StreamEvents, subjects.StreamDeadLetter} {
		if _, err := js.Stream(testCtx(t), name); err != nil {
			t.Errorf("stream %s: %v", name, err)
		}
	}
	for _, name := range []string{subjects.BucketCheckpoints, subjects.BucketControl, subjects.BucketAgents} {
		if _, err := env.Bus.KV(testCtx(t), name); err != nil {
			t.Errorf("bucket %s: %v", name, err)
		}
	}
}

func TestProvisionSurvivesRestart(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	epoch, err := env.Bus.Epoch(testCtx(t))
	if err != nil || epoch == "" {
		t.Fatalf("Epoch() = %q, %v; want a non-empty epoch", epoch, err)
	}
	var last uint64
	for n := 1; n <= 3; n++ {
		last = publishEvent(t, env.Bus, "w1", n)
	}
	publishStep(t, env.Bus, "echo", 1)
	if got, want := env.Server.DataDir(), env.Dir; !strings.HasPrefix(got, want) {
		t.Errorf("Server.DataDir() = %q, want it under %q", got, want)
	}

	if err := env.Server.Shutdown(testCtx(t)); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	again := bustest.NewWithOptions(t, bustest.Options{Dir: env.Dir}) // provisions on the old store
	if again.URL == env.URL {
		t.Logf("restarted server reused URL %s", again.URL)
	}

	epoch2, err := again.Bus.Epoch(testCtx(t))
	if err != nil {
		t.Fatalf("Epoch() after restart: %v", err)
	}
	if epoch2 != epoch {
		t.Errorf("epoch changed across restart: %q, then %q", epoch, epoch2)
	}
	got, err := again.Bus.LastOffset(testCtx(t), tenant, "w1")
	if err != nil || got != last {
		t.Errorf("LastOffset after restart = %d, %v; want %d", got, err, last)
	}
	if n := streamMsgs(t, again, subjects.StreamEvents); n != 3 {
		t.Errorf("%s holds %d messages after restart, want 3", subjects.StreamEvents, n)
	}
	if n := streamMsgs(t, again, subjects.StreamSteps); n != 1 {
		t.Errorf("%s holds %d messages after restart, want 1", subjects.StreamSteps, n)
	}
	if err := again.Bus.Provision(testCtx(t), bus.StreamsConfig{}); err != nil {
		t.Errorf("provision after restart: %v", err)
	}
}

func TestProvisionConcurrently(t *testing.T) {
	t.Parallel()
	env := bustest.NewWithOptions(t, bustest.Options{NoProvision: true})
	errs := make(chan error, 4)
	for range cap(errs) {
		b := bustest.Connect(t, env)
		go func() { errs <- b.Provision(testCtx(t), bus.StreamsConfig{}) }()
	}
	for range cap(errs) {
		if err := recv(t, errs, "provision result"); err != nil {
			t.Errorf("concurrent Provision: %v", err)
		}
	}
	epoch, err := env.Bus.Epoch(testCtx(t))
	if err != nil || epoch == "" {
		t.Fatalf("Epoch() = %q, %v after concurrent provisioning", epoch, err)
	}
	if err := env.Bus.Provision(testCtx(t), bus.StreamsConfig{}); err != nil {
		t.Errorf("Provision after the race: %v", err)
	}
}

func TestEpochChangesWhenStreamRecreated(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	before, err := env.Bus.Epoch(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Bus.JetStream().DeleteStream(testCtx(t), subjects.StreamEvents); err != nil {
		t.Fatal(err)
	}
	if err := env.Bus.Provision(testCtx(t), bus.StreamsConfig{}); err != nil {
		t.Fatalf("Provision after deleting %s: %v", subjects.StreamEvents, err)
	}
	after, err := env.Bus.Epoch(testCtx(t))
	if err != nil || after == "" || after == before {
		t.Fatalf("epoch %q after recreating the stream (%v), want a new one (was %q)", after, err, before)
	}
}

func TestProvisionReportsChangedMaxAge(t *testing.T) {
	t.Parallel()
	env := bustest.NewWithOptions(t, bustest.Options{Streams: bus.StreamsConfig{EventsMaxAge: 7 * 24 * time.Hour}})

	err := env.Bus.Provision(testCtx(t), bus.StreamsConfig{EventsMaxAge: time.Hour})
	if !errors.Is(err, bus.ErrIncompatible) {
		t.Fatalf("provision with a shorter events max age: err = %v, want ErrIncompatible", err)
	}
	var ie *bus.IncompatibleError
	if !errors.As(err, &ie) {
		t.Fatalf("err %v is not an *IncompatibleError", err)
	}
	if !strings.Contains(ie.Name, subjects.StreamEvents) {
		t.Errorf("IncompatibleError.Name = %q, want it to mention %s", ie.Name, subjects.StreamEvents)
	}
	if !slices.ContainsFunc(ie.Differences, func(d string) bool { return strings.Contains(d, "max age") }) {
		t.Errorf("IncompatibleError.Differences = %q, want one about max age", ie.Differences)
	}
	if msg := err.Error(); !strings.Contains(msg, subjects.StreamEvents) || !strings.Contains(msg, "max age") {
		t.Errorf("error message %q should name the stream and the difference", msg)
	}

	s, err := env.Bus.JetStream().Stream(testCtx(t), subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxAge != 7*24*time.Hour {
		t.Errorf("%s MaxAge = %s after a rejected provision, want it unchanged at 168h", subjects.StreamEvents, info.Config.MaxAge)
	}
}

func TestProvisionReportsForeignStream(t *testing.T) {
	t.Parallel()
	env := bustest.NewWithOptions(t, bustest.Options{NoProvision: true})
	_, err := env.Bus.JetStream().CreateStream(testCtx(t), jetstream.StreamConfig{
		Name: subjects.StreamSteps, Subjects: []string{"legacy.steps.>"}, Storage: jetstream.FileStorage,
	})
	if err != nil {
		t.Fatalf("create foreign stream: %v", err)
	}

	err = env.Bus.Provision(testCtx(t), bus.StreamsConfig{})
	var ie *bus.IncompatibleError
	if !errors.Is(err, bus.ErrIncompatible) || !errors.As(err, &ie) {
		t.Fatalf("provision over a foreign %s: err = %v, want an *IncompatibleError", subjects.StreamSteps, err)
	}
	if !strings.Contains(ie.Name, subjects.StreamSteps) {
		t.Errorf("IncompatibleError.Name = %q, want it to mention %s", ie.Name, subjects.StreamSteps)
	}
	joined := strings.Join(ie.Differences, "; ")
	for _, want := range []string{"subjects", "legacy.steps.>", subjects.AllSteps, "retention"} {
		if !strings.Contains(joined, want) {
			t.Errorf("Differences %q do not mention %q", joined, want)
		}
	}
	// The foreign stream is left alone; everything else is provisioned.
	s, err := env.Bus.JetStream().Stream(testCtx(t), subjects.StreamSteps)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Subjects; !slices.Equal(got, []string{"legacy.steps.>"}) {
		t.Errorf("foreign stream's subjects changed to %q", got)
	}
	if _, err := env.Bus.Epoch(testCtx(t)); err != nil {
		t.Errorf("events stream was not provisioned beside the foreign one: %v", err)
	}
}

func TestStreamsConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  bus.StreamsConfig
		want []string // substrings, one per expected problem
	}{
		{"valid", bus.StreamsConfig{EventsMaxAge: time.Hour, Duplicates: time.Minute, Replicas: 3, CheckpointHistory: 64, SessionTTL: time.Hour}, nil},
		{"max age too short", bus.StreamsConfig{EventsMaxAge: time.Second, Duplicates: time.Second, Replicas: 1, CheckpointHistory: 1, SessionTTL: time.Hour},
			[]string{"events max age 1s"}},
		{"everything wrong", bus.StreamsConfig{EventsMaxAge: 30 * time.Second, Duplicates: -time.Second, Replicas: 7, CheckpointHistory: 65, SessionTTL: time.Second},
			[]string{"events max age 30s", "duplicates window -1s", "replicas 7", "checkpoint history 65", "session TTL 1s"}},
		{"duplicates beyond max age", bus.StreamsConfig{EventsMaxAge: time.Hour, Duplicates: 2 * time.Hour, Replicas: 1, CheckpointHistory: 1, SessionTTL: time.Hour},
			[]string{"duplicates window 2h0m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblems(t, tt.cfg.Validate(), tt.want)
		})
	}
}

// checkProblems checks that err joins exactly one problem per want, each
// containing its substring.
func checkProblems(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Validate() = %v, want nil", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Validate() = nil, want %d problems", len(want))
	}
	var problems []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	} else {
		problems = []error{err}
	}
	if len(problems) != len(want) {
		t.Errorf("Validate() joined %d problems, want %d: %v", len(problems), len(want), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %q, want a problem mentioning %q", err, w)
		}
	}
	for _, p := range problems {
		if !strings.HasPrefix(p.Error(), "bus: ") {
			t.Errorf("problem %q lacks the \"bus: \" prefix", p)
		}
	}
}
