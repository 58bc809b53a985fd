package gateway

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentbus/agentbus/gateway/internal/fanout"
)

// Stream kinds, the "kind" label of the stream metrics (fanout.KindA2A
// counts A2A streams' slow closes; their connections and frames are
// counted as sse).
const (
	metricKindSSE = fanout.KindSSE
	metricKindWS  = fanout.KindWS
)

// metrics are one gateway's Prometheus metrics, served at GET /metrics from
// a registry of its own (two gateways in one process never share a
// counter). Every field is safe for concurrent use.
//
// wrap maintains the HTTP metrics and the connections gauge itself; the
// streaming code adds the per-frame ones through g.stats() (packages ws,
// a2a and internal/fanout get theirs from mount.go):
//
//	agentbus_gateway_http_request_duration_seconds{route,code}  histogram: every request by mux pattern
//	                                                            ("GET /v1/workflows/{id}", "unmatched") and status;
//	                                                            its _count is the request count. A stream's
//	                                                            duration is its whole life.
//	agentbus_gateway_http_requests_in_flight                    gauge, streams included
//	agentbus_gateway_connections{kind}                          gauge of open streams, kind "sse" or "ws": wrap
//	                                                            counts a request whose answer is 200
//	                                                            text/event-stream or 101 Switching Protocols
//	                                                            until its handler returns; do not Inc it
//	                                                            yourself (a WebSocket handler must not return
//	                                                            before its socket closes, as coder/websocket
//	                                                            expects anyway)
//	agentbus_gateway_frames_sent_total{kind}                    g.stats().framesSent.WithLabelValues(metricKindWS).Inc()
//	                                                            for every event frame written
//	agentbus_gateway_replays_total{kind}                        .replays: a stream started at an offset older
//	                                                            than the live tail (a resume or a replay)
//	agentbus_gateway_resets_total{kind}                         .resets: a reset frame sent (offset past
//	                                                            retention or another epoch)
//	agentbus_gateway_slow_client_closes_total{kind}             .slowCloses: a client closed for falling behind
//	                                                            its send queue
//	agentbus_gateway_hubs                                       .hubs: gauge of workflows this gateway follows
//	                                                            for live subscribers (one consumer each, see
//	                                                            internal/fanout/hub.go)
//	agentbus_gateway_auth_failures_total{reason}                401/403 from wrap: reason "missing", "malformed",
//	                                                            "invalid", "forbidden" (role) or "cross_origin"
//
// plus the Go runtime's go_* and the process's process_* metrics.
type metrics struct {
	registry     *prometheus.Registry
	requests     *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	connections  *prometheus.GaugeVec
	framesSent   *prometheus.CounterVec
	replays      *prometheus.CounterVec
	resets       *prometheus.CounterVec
	slowCloses   *prometheus.CounterVec
	hubs         prometheus.Gauge
	authFailures *prometheus.CounterVec
}

func newMetrics() *metrics {
	const ns, sub = "agentbus", "gateway"
	perKind := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, []string{"kind"})
	}
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "http_request_duration_seconds",
			Help:    "HTTP requests by route pattern and status code, and how long they took (a stream: its whole life).",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "http_requests_in_flight",
			Help: "HTTP requests being served, open streams included."}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "connections",
			Help: "Open event streams by kind (sse, ws)."}, []string{"kind"}),
		framesSent: perKind("frames_sent_total", "Event frames written to streams."),
		replays:    perKind("replays_total", "Streams that started at an offset older than the live tail."),
		resets:     perKind("resets_total", "Reset frames sent (offset past retention or another epoch)."),
		slowCloses: perKind("slow_client_closes_total", "Streams closed because the client fell behind its send queue."),
		hubs: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "hubs",
			Help: "Workflows followed by one shared consumer for their live subscribers."}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "auth_failures_total",
			Help: "Requests refused with 401 or 403 by reason (missing, malformed, invalid, forbidden, cross_origin)."}, []string{"reason"}),
	}
	m.registry.MustRegister(m.requests, m.inFlight, m.connections, m.framesSent, m.replays, m.resets, m.slowCloses, m.hubs, m.authFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Show every stream series from the start, at 0, so dashboards and
	// rate() need no special case for "never happened yet".
	for _, kind := range []string{metricKindSSE, metricKindWS} {
		m.connections.WithLabelValues(kind)
		for _, c := range []*prometheus.CounterVec{m.framesSent, m.replays, m.resets, m.slowCloses} {
			c.WithLabelValues(kind)
		}
	}
	return m
}

// handler serves the registry, and extra if not nil, in the Prometheus
// text format (or OpenMetrics, with exemplars, when the scraper asks).
func (m *metrics) handler(extra prometheus.Gatherer) http.Handler {
	var g prometheus.Gatherer = m.registry
	if extra != nil {
		g = prometheus.Gatherers{m.registry, extra}
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{Registry: m.registry, EnableOpenMetrics: true})
}

// track starts measuring one request; the caller serves through the
// returned writer and calls its done when the handler returned.
func (m *metrics) track(w http.ResponseWriter, route string) *trackedWriter {
	m.inFlight.Inc()
	return &trackedWriter{ResponseWriter: w, m: m, route: route, start: time.Now()}
}

// trackedWriter is the ResponseWriter of a tracked request: it notes the status
// and whether the answer became a stream. It forwards Flush, Hijack and
// Unwrap so that SSE (http.Flusher), coder/websocket (http.Hijacker) and
// http.ResponseController work through it. Like any ResponseWriter it is
// used by one goroutine at a time.
type trackedWriter struct {
	http.ResponseWriter
	m      *metrics
	route  string
	start  time.Time
	status int
	stream string // metricKindSSE or metricKindWS once counted in connections
}

func (r *trackedWriter) WriteHeader(code int) {
	if r.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		r.noteStatus(code)
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *trackedWriter) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.noteStatus(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// Flush sends buffered data; an unwritten header goes out as 200.
func (r *trackedWriter) Flush() {
	if r.status == 0 {
		r.noteStatus(http.StatusOK)
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Hijack hands the connection over (a WebSocket upgrade).
func (r *trackedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if r.status == 0 {
		r.noteStatus(http.StatusSwitchingProtocols)
	}
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (r *trackedWriter) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *trackedWriter) noteStatus(code int) {
	r.status = code
	switch {
	case code == http.StatusSwitchingProtocols:
		r.stream = metricKindWS
	case code == http.StatusOK && strings.HasPrefix(r.Header().Get("Content-Type"), "text/event-stream"):
		r.stream = metricKindSSE
	default:
		return
	}
	r.m.connections.WithLabelValues(r.stream).Inc()
}

// done records the finished request.
func (r *trackedWriter) done() {
	code := r.status
	if code == 0 {
		code = http.StatusOK // what net/http sends for a handler that wrote nothing
	}
	r.m.requests.WithLabelValues(r.route, strconv.Itoa(code)).Observe(time.Since(r.start).Seconds())
	r.m.inFlight.Dec()
	if r.stream != "" {
		r.m.connections.WithLabelValues(r.stream).Dec()
	}
}

// routeOf names the route h would serve r with: its mux pattern, or
// "unmatched" (a bounded label set whatever clients send).
func routeOf(h http.Handler, r *http.Request) string {
	mux, ok := h.(interface {
		Handler(*http.Request) (http.Handler, string)
	})
	if !ok {
		return routeUnmatched
	}
	if _, pattern := mux.Handler(r); pattern != "" {
		return pattern
	}
	return routeUnmatched
}

// routeUnmatched is the route of a request no pattern matches.
const routeUnmatched = "unmatched"
