package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// The service speaks the NATS micro protocol as standard tooling asks it:
// PING, INFO and STATS on all, name and id subjects; endpoint requests
// answered in queue group "q", errors as micro error headers.
func TestServiceSpeaksMicro(t *testing.T) {
	env := bustest.New(t)
	ctx := testCtx(t)
	svc, err := env.Bus.AddService(ctx, bus.ServiceConfig{
		Name: "svc-a", Version: "1.2.3", Description: "a test service", Metadata: map[string]string{"k": "v"},
		Endpoints: []bus.Endpoint{{Name: "up", Subject: "test.up", Metadata: map[string]string{"e": "1"},
			Handle: func(_ context.Context, b []byte) ([]byte, error) {
				if string(b) == "fail" {
					return nil, errors.New("asked to fail")
				}
				return []byte(strings.ToUpper(string(b))), nil
			}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := func(subj, body string) *nats.Msg {
		t.Helper()
		m, err := nc.Request(subj, []byte(body), 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subj, err)
		}
		return m
	}
	if m := req("test.up", "hi"); string(m.Data) != "HI" {
		t.Fatalf("endpoint answered %q", m.Data)
	}
	if m := req("test.up", "fail"); m.Header.Get("Nats-Service-Error") != "asked to fail" || m.Header.Get("Nats-Service-Error-Code") != "500" {
		t.Fatalf("failing endpoint answered headers %v", m.Header)
	}
	for _, subj := range []string{"$SRV.PING", "$SRV.PING.svc-a", "$SRV.PING.svc-a." + svc.ID()} {
		var p struct{ Name, ID, Version, Type string }
		if err := json.Unmarshal(req(subj, "").Data, &p); err != nil || p.Name != "svc-a" || p.ID != svc.ID() || p.Version != "1.2.3" || p.Type != "io.nats.micro.v1.ping_response" {
			t.Errorf("%s = %+v (%v)", subj, p, err)
		}
	}
	var info struct {
		Type, Description string
		Metadata          map[string]string
		Endpoints         []struct {
			Name, Subject string
			QueueGroup    string `json:"queue_group"`
		}
	}
	if err := json.Unmarshal(req("$SRV.INFO.svc-a", "").Data, &info); err != nil || info.Type != "io.nats.micro.v1.info_response" ||
		info.Description != "a test service" || info.Metadata["k"] != "v" || len(info.Endpoints) != 1 || info.Endpoints[0].Subject != "test.up" || info.Endpoints[0].QueueGroup != "q" {
		t.Errorf("INFO = %+v (%v)", info, err)
	}
	var stats struct {
		Type      string
		Endpoints []struct {
			NumRequests int    `json:"num_requests"`
			NumErrors   int    `json:"num_errors"`
			LastError   string `json:"last_error"`
		}
	}
	if err := json.Unmarshal(req("$SRV.STATS.svc-a", "").Data, &stats); err != nil || stats.Type != "io.nats.micro.v1.stats_response" ||
		len(stats.Endpoints) != 1 || stats.Endpoints[0].NumRequests != 2 || stats.Endpoints[0].NumErrors != 1 || stats.Endpoints[0].LastError != "asked to fail" {
		t.Errorf("STATS = %+v (%v), want the endpoint's own 2 requests, 1 error", stats, err)
	}
	if err := svc.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := svc.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := nc.Request("$SRV.PING.svc-a", nil, 200*time.Millisecond); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("PING after Stop: %v, want no responders", err)
	}
}

// With Stats, the service reports the work its owner counted.
func TestServiceStatsFromTheOwner(t *testing.T) {
	env := bustest.New(t)
	_, err := env.Bus.AddService(testCtx(t), bus.ServiceConfig{
		Name: "svc-b", Version: "1.0.0",
		Endpoints: []bus.Endpoint{{Name: "work", Subject: "test.work", Handle: func(context.Context, []byte) ([]byte, error) { return nil, nil }}},
		Stats: func(string) bus.EndpointStats {
			return bus.EndpointStats{Requests: 4, Errors: 1, LastError: "boom", ProcessingTime: 40 * time.Millisecond, Data: map[string]int{"x": 1}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	m, err := nc.Request("$SRV.STATS.svc-b", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Endpoints []struct {
			NumRequests int             `json:"num_requests"`
			NumErrors   int             `json:"num_errors"`
			Processing  time.Duration   `json:"processing_time"`
			Average     time.Duration   `json:"average_processing_time"`
			Data        json.RawMessage `json:"data"`
		}
	}
	if err := json.Unmarshal(m.Data, &stats); err != nil || len(stats.Endpoints) != 1 {
		t.Fatalf("STATS %s (%v)", m.Data, err)
	}
	e := stats.Endpoints[0]
	if e.NumRequests != 4 || e.NumErrors != 1 || e.Processing != 40*time.Millisecond || e.Average != 10*time.Millisecond || string(e.Data) != `{"x":1}` {
		t.Fatalf("STATS endpoint %+v", e)
	}
}

func TestServiceConfigIsChecked(t *testing.T) {
	env := bustest.New(t)
	_, err := env.Bus.AddService(testCtx(t), bus.ServiceConfig{Name: "bad name", Version: "one",
		Endpoints: []bus.Endpoint{{Name: "e"}}})
	for _, want := range []string{`name "bad name"`, `version "one"`, `endpoint "e"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v, want it to mention %s", err, want)
		}
	}
}
