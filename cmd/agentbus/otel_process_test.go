package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
)

// gotSpan is a span as an OTLP receiver got it.
type gotSpan struct {
	service, name             string
	traceID, spanID, parentID string
	attrs                     map[string]string
	errored                   bool
}

// otlpReceiver is an OTLP/HTTP trace endpoint: it decodes every
// ExportTraceServiceRequest (protobuf, gzip or not) and keeps its spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []gotSpan
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
			http.NotFound(w, req)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		var export coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &export)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.add(&export)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) add(export *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range export.ResourceSpans {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g := gotSpan{service: service, name: s.Name, traceID: hex.EncodeToString(s.TraceId),
					spanID: hex.EncodeToString(s.SpanId), parentID: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{},
					errored: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR}
				for _, a := range s.Attributes {
					v := a.GetValue()
					switch {
					case v.GetStringValue() != "":
						g.attrs[a.Key] = v.GetStringValue()
					default:
						g.attrs[a.Key] = fmt.Sprint(v.GetIntValue())
					}
				}
				r.spans = append(r.spans, g)
			}
		}
	}
}

// trace returns the spans of one trace.
func (r *otlpReceiver) trace(id string) []gotSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []gotSpan
	for _, s := range r.spans {
		if s.traceID == id {
			out = append(out, s)
		}
	}
	return out
}

// rawTracedAgent serves capability "upper" with plain nats.go, the way an
// agent in any language joins a workflow's trace: it reads the step's
// ce-traceparent, makes its own span under it (exported over OTLP/HTTP, as
// its own OpenTelemetry SDK would), and sends that span's context back as
// the reply's ce-traceparent.
func rawTracedAgent(ctx context.Context, t *testing.T, natsURL, otlpURL string, ready chan<- struct{}) error {
	nc, err := nats.Connect(natsURL, nats.Name("raw-traced-agent"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "AGENTBUS_STEPS", jetstream.ConsumerConfig{
		Durable: "step-upper", FilterSubject: "agentbus.*.step.upper", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	})
	if err != nil {
		return err
	}
	close(ready)
	for ctx.Err() == nil {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			continue
		}
		for msg := range batch.Messages() {
			start := time.Now()
			h := msg.Headers()
			var step struct {
				StepID  string `json:"step_id"`
				Attempt int    `json:"attempt"`
				Input   string `json:"input"`
			}
			if err := json.Unmarshal(msg.Data(), &step); err != nil {
				return err
			}
			// traceparent: 00-<trace id>-<parent span id>-<flags>
			parts := strings.Split(h.Get("ce-traceparent"), "-")
			if len(parts) != 4 {
				return fmt.Errorf("step without a W3C ce-traceparent: %q", h.Get("ce-traceparent"))
			}
			mine := make([]byte, 8)
			_, _ = rand.Read(mine)
			traceparent := strings.Join([]string{"00", parts[1], hex.EncodeToString(mine), parts[3]}, "-")
			tenant, workflow := h.Get("ce-tenantid"), h.Get("ce-workflowid")
			key := fmt.Sprintf("%s/%s/%s/%d", tenant, workflow, step.StepID, step.Attempt)
			reply := nats.NewMsg("agentbus." + tenant + ".reply." + workflow)
			for k, v := range map[string]string{
				"ce-specversion": "1.0", "ce-id": key, "ce-source": "/raw/upper", "ce-type": "io.agentbus.step.completed.v1",
				"ce-tenantid": tenant, "ce-workflowid": workflow, "ce-stepid": step.StepID, "ce-traceparent": traceparent,
				"Content-Type": "application/json", "Nats-Msg-Id": key,
			} {
				reply.Header.Set(k, v)
			}
			reply.Data, _ = json.Marshal(map[string]any{"step_id": step.StepID, "capability": "upper", "attempt": step.Attempt,
				"output": strings.ToUpper(step.Input), "worker": "raw-upper"})
			exportSpan(t, otlpURL, parts[1], hex.EncodeToString(mine), parts[2], "upper "+step.StepID, start)
			if _, err := js.PublishMsg(ctx, reply); err != nil {
				return err
			}
			if err := msg.Ack(); err != nil {
				return err
			}
		}
	}
	return nil
}

// exportSpan sends one span over OTLP/HTTP, as any OpenTelemetry SDK would.
func exportSpan(t *testing.T, url, traceID, spanID, parentID, name string, start time.Time) {
	b := func(s string) []byte { v, _ := hex.DecodeString(s); return v }
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name",
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "raw-upper"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: b(traceID), SpanId: b(spanID), ParentSpanId: b(parentID), Name: name, Kind: tracepb.Span_SPAN_KIND_CONSUMER,
			StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(time.Now().UnixNano()),
		}}}},
	}}}
	body, _ := proto.Marshal(req)
	resp, err := http.Post(url+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Errorf("raw agent export: %v", err)
		return
	}
	_ = resp.Body.Close()
}

// TestTraceAcrossProcesses runs a gateway, an orchestrator and a worker as
// processes with --otel, exporting to a receiver started here, plus a raw
// nats.go agent: every span of the workflow, from each of the four, shares
// one trace id — the one GET /v1/workflows/{id} reports — and the tree is
// linked across process boundaries through ce-traceparent.
func TestTraceAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	env := bustest.New(t)
	recv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms: export soon after each span ends
	t.Setenv("OTEL_SERVICE_NAME", "")
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- rawTracedAgent(ctx, t, env.URL, recv.URL, ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("raw agent: %v", err)
		}
	})
	<-ready
	worker := startProc(t, "worker", "--nats", env.URL, "--capabilities", "echo", "--heartbeat", "200ms", "--otel")
	worker.waitLine(t, workerLine)
	orch := startProc(t, "orchestrator", "--nats", env.URL, "--otel")
	orch.waitLine(t, orchestratorLine)
	gw := startProc(t, "gateway", "--nats", env.URL, "--http-addr", "127.0.0.1:0", "--otel")
	httpURL := gw.waitLine(t, regexp.MustCompile(`msg="agentbus gateway ready" nats=\S+ http=(\S+)`))[1]

	wfID := postWorkflow(t, httpURL, `{"plan":{"steps":[{"id":"a","capability":"echo","input":"x"},`+
		`{"id":"b","capability":"upper","input":"hello","depends_on":["a"]},{"id":"c","capability":"echo","input":"y","depends_on":["b"]}]}}`)
	var state struct {
		Status  string `json:"status"`
		TraceID string `json:"trace_id"`
	}
	eventually(t, 30*time.Second, "the workflow completes", func() bool {
		r, err := http.Get(httpURL + "/v1/workflows/" + wfID)
		if err != nil {
			return false
		}
		defer r.Body.Close()
		return json.NewDecoder(r.Body).Decode(&state) == nil && state.Status == "completed"
	})
	if len(state.TraceID) != 32 {
		t.Fatalf("GET /v1/workflows/%s has trace_id %q", wfID, state.TraceID)
	}
	want := map[string]int{"POST /v1/workflows": 1, "workflow send": 1, "workflow submit": 1, "workflow plan": 1,
		"step echo": 2, "step upper": 1, "step queue": 2, "step run": 2, "upper b": 1, "step reply": 3, "workflow completed": 1}
	var spans []gotSpan
	eventually(t, 20*time.Second, "every span of the workflow reaches the receiver", func() bool {
		spans = recv.trace(state.TraceID)
		got := map[string]int{}
		for _, s := range spans {
			got[s.name]++
		}
		for name, n := range want {
			if got[name] < n {
				return false
			}
		}
		return true
	})
	byID := map[string]gotSpan{}
	services := map[string]bool{}
	for _, s := range spans {
		byID[s.spanID] = s
		services[s.service] = true
	}
	for _, svc := range []string{"agentbus-gateway", "agentbus-orchestrator", "agentbus-worker", "raw-upper"} {
		if !services[svc] {
			t.Errorf("no span of %s in the trace (services %v)", svc, services)
		}
	}
	parentOf := func(s gotSpan) gotSpan { return byID[s.parentID] }
	for _, s := range spans {
		switch s.name {
		case "POST /v1/workflows":
			if s.parentID != "" {
				t.Errorf("the HTTP submission has a parent %s: it should be the root", s.parentID)
			}
		case "workflow submit":
			if p := parentOf(s); p.name != "workflow send" || p.service != "agentbus-gateway" {
				t.Errorf("workflow submit's parent is %q of %q, want the gateway's send", p.name, p.service)
			}
		case "step run":
			if p := parentOf(s); p.name != "step echo" || p.service != "agentbus-orchestrator" {
				t.Errorf("step run's parent is %q of %q, want the orchestrator's step span", p.name, p.service)
			}
		case "upper b":
			if p := parentOf(s); p.name != "step upper" {
				t.Errorf("the raw agent's span's parent is %q, want the step's dispatch", p.name)
			}
		case "step reply":
			if p := parentOf(s); p.name != "step run" && p.name != "upper b" {
				t.Errorf("a reply's parent is %q, want the run that sent it", p.name)
			}
		}
		if s.errored {
			t.Errorf("span %s of %s ended in error", s.name, s.service)
		}
	}
}

func TestAskPrintsTheTraceID(t *testing.T) {
	f := formatFrame(events.Frame{Offset: 1, Type: "status",
		Data: json.RawMessage(`{"state":"submitted","message":"workflow accepted","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`)})
	if !strings.Contains(f, "submitted: workflow accepted (trace 4bf92f3577b34da6a3ce929d0e0e4736)") {
		t.Fatalf("status line %q does not show the trace id", f)
	}
}
