package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// The NATS micro protocol (ADR-32), spoken here rather than through
// nats.go/micro: micro counts an endpoint's requests itself and lets no one
// else say what a request is, but a worker's real requests are steps pulled
// from JetStream, so `nats micro stats` showed 0 for agents that did work.
const (
	microPrefix        = "$SRV"
	microQueue         = "q"
	microPingType      = "io.nats.micro.v1.ping_response"
	microInfoType      = "io.nats.micro.v1.info_response"
	microStatsType     = "io.nats.micro.v1.stats_response"
	microErrorHeader   = "Nats-Service-Error"
	microErrorCodeHdr  = "Nats-Service-Error-Code"
	microSemverPattern = `^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$`
)

var (
	microName   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	microSemver = regexp.MustCompile(microSemverPattern)
)

// ServiceConfig describes a NATS micro service, so that standard NATS
// tooling ($SRV.PING, $SRV.INFO, $SRV.STATS; `nats micro ls/info/stats`)
// sees the process.
type ServiceConfig struct {
	// Name matches ^[A-Za-z0-9_-]+$; Version is semver.
	Name, Version, Description string
	Metadata                   map[string]string
	Endpoints                  []Endpoint
	// Stats, if set, says what $SRV.STATS reports for an endpoint — the
	// work it stands for, counted by its owner — instead of the requests
	// the endpoint itself answered.
	Stats func(endpoint string) EndpointStats
}

// EndpointStats is what $SRV.STATS reports for one endpoint.
type EndpointStats struct {
	Requests, Errors int
	LastError        string
	ProcessingTime   time.Duration
	// Data is reported as the endpoint's "data" (JSON); nil leaves it out.
	Data any
}

// Endpoint is one request/reply endpoint of a service.
type Endpoint struct {
	Name, Subject string
	Metadata      map[string]string
	// Handle answers a request; an error is sent as a micro error reply
	// (code 500, or a *ServiceError's own).
	Handle func(ctx context.Context, request []byte) ([]byte, error)
	// HandleSubject, when set instead of Handle, also gets the subject the
	// request came on: an endpoint on a wildcard subject
	// ("agentbus.*.documents.list") reads its tenant there.
	HandleSubject func(ctx context.Context, subject string, request []byte) ([]byte, error)
}

// ServiceError is an endpoint's error with the code its micro error reply
// carries (Nats-Service-Error-Code), and what Call returns for one.
type ServiceError struct {
	Code    int
	Message string
}

func (e *ServiceError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// Call sends request to a micro endpoint and returns its answer: a micro
// error reply is a *ServiceError, no service listening is ErrNoResponder.
func (b *Bus) Call(ctx context.Context, subject string, request []byte) ([]byte, error) {
	resp, err := b.nc.RequestWithContext(ctx, subject, request)
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		return nil, fmt.Errorf("%w on %s: %v", ErrNoResponder, subject, err)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: request %s: %w", subject, err)
	}
	if msg := resp.Header.Get(microErrorHeader); msg != "" {
		code, _ := strconv.Atoi(resp.Header.Get(microErrorCodeHdr))
		return nil, &ServiceError{Code: code, Message: msg}
	}
	return resp.Data, nil
}

// Service is a running micro service. Stop is safe to call twice.
type Service struct {
	cfg     ServiceConfig
	nc      *nats.Conn
	id      string
	started time.Time

	mu      sync.Mutex
	subs    []*nats.Subscription
	counted map[string]*EndpointStats // requests each endpoint answered
	stopped bool
}

// AddService registers a micro service on the bus's connection: its
// endpoints (queue group "q", as nats.go/micro) and the PING, INFO and
// STATS subjects for all services, its name, and its instance id. The
// server routes them here once it returns.
func (b *Bus) AddService(ctx context.Context, cfg ServiceConfig) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, nc: b.nc, id: nuid.Next(), started: time.Now().UTC(), counted: map[string]*EndpointStats{}}
	for _, e := range cfg.Endpoints {
		s.counted[e.Name] = &EndpointStats{}
		if err := s.subscribe(b.nc, e.Subject, microQueue, s.endpointHandler(ctx, e)); err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("bus: micro endpoint %s: %w", e.Name, err)
		}
	}
	verbs := map[string]func() any{"PING": s.ping, "INFO": s.info, "STATS": s.stats}
	for verb, answer := range verbs {
		h := func(m *nats.Msg) {
			out, _ := json.Marshal(answer())
			_ = m.Respond(out)
		}
		for _, subj := range []string{microPrefix + "." + verb, microPrefix + "." + verb + "." + cfg.Name, microPrefix + "." + verb + "." + cfg.Name + "." + s.id} {
			if err := s.subscribe(b.nc, subj, "", h); err != nil {
				_ = s.Stop()
				return nil, fmt.Errorf("bus: micro service %s: %w", cfg.Name, err)
			}
		}
	}
	// Subscribing only queues the SUBs: a round trip makes the service
	// reachable once AddService returns (a `nats micro ls` right after a
	// worker started, or a test, must find it). Disconnected, the
	// subscriptions go out on reconnect; there is nothing to wait for.
	if b.nc.IsConnected() {
		if err := b.nc.FlushTimeout(5 * time.Second); err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("bus: micro service %s: %w", cfg.Name, err)
		}
	}
	return s, nil
}

func (c ServiceConfig) validate() error {
	var errs []error
	if !microName.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("bus: micro service name %q: want %s", c.Name, microName))
	}
	if !microSemver.MatchString(c.Version) {
		errs = append(errs, fmt.Errorf("bus: micro service %s version %q: want semver", c.Name, c.Version))
	}
	for _, e := range c.Endpoints {
		if !microName.MatchString(e.Name) || e.Subject == "" || (e.Handle == nil) == (e.HandleSubject == nil) {
			errs = append(errs, fmt.Errorf("bus: micro service %s endpoint %q: want a name matching %s, a subject and one handler (Handle or HandleSubject)", c.Name, e.Name, microName))
		}
	}
	return errors.Join(errs...)
}

func (s *Service) subscribe(nc *nats.Conn, subject, queue string, h nats.MsgHandler) error {
	var sub *nats.Subscription
	var err error
	if queue != "" {
		sub, err = nc.QueueSubscribe(subject, queue, h)
	} else {
		sub, err = nc.Subscribe(subject, h)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	return nil
}

// endpointHandler answers an endpoint's requests and counts them.
func (s *Service) endpointHandler(ctx context.Context, e Endpoint) nats.MsgHandler {
	return func(m *nats.Msg) {
		start := time.Now()
		var out []byte
		var err error
		if e.HandleSubject != nil {
			out, err = e.HandleSubject(ctx, m.Subject, m.Data)
		} else {
			out, err = e.Handle(ctx, m.Data)
		}
		if err != nil {
			code, msg := 500, err.Error()
			if se := (*ServiceError)(nil); errors.As(err, &se) {
				code, msg = se.Code, se.Message
			}
			reply := nats.NewMsg(m.Reply)
			reply.Header.Set(microErrorHeader, msg)
			reply.Header.Set(microErrorCodeHdr, strconv.Itoa(code))
			_ = m.RespondMsg(reply)
		} else {
			_ = m.Respond(out)
		}
		s.mu.Lock()
		c := s.counted[e.Name]
		c.Requests++
		c.ProcessingTime += time.Since(start)
		if err != nil {
			c.Errors++
			c.LastError = err.Error()
		}
		s.mu.Unlock()
	}
}

// identity is what every micro answer starts with.
type microIdentity struct {
	Name     string            `json:"name"`
	ID       string            `json:"id"`
	Version  string            `json:"version"`
	Metadata map[string]string `json:"metadata"`
	Type     string            `json:"type"`
}

func (s *Service) identity(typ string) microIdentity {
	md := s.cfg.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return microIdentity{Name: s.cfg.Name, ID: s.id, Version: s.cfg.Version, Metadata: md, Type: typ}
}

func (s *Service) ping() any { return s.identity(microPingType) }

type microEndpointInfo struct {
	Name       string            `json:"name"`
	Subject    string            `json:"subject"`
	QueueGroup string            `json:"queue_group"`
	Metadata   map[string]string `json:"metadata"`
}

func (s *Service) info() any {
	eps := make([]microEndpointInfo, 0, len(s.cfg.Endpoints))
	for _, e := range s.cfg.Endpoints {
		eps = append(eps, microEndpointInfo{Name: e.Name, Subject: e.Subject, QueueGroup: microQueue, Metadata: e.Metadata})
	}
	return struct {
		microIdentity
		Description string              `json:"description"`
		Endpoints   []microEndpointInfo `json:"endpoints"`
	}{s.identity(microInfoType), s.cfg.Description, eps}
}

type microEndpointStats struct {
	Name                  string          `json:"name"`
	Subject               string          `json:"subject"`
	QueueGroup            string          `json:"queue_group"`
	NumRequests           int             `json:"num_requests"`
	NumErrors             int             `json:"num_errors"`
	LastError             string          `json:"last_error"`
	ProcessingTime        time.Duration   `json:"processing_time"`
	AverageProcessingTime time.Duration   `json:"average_processing_time"`
	Data                  json.RawMessage `json:"data,omitempty"`
}

func (s *Service) stats() any {
	eps := make([]microEndpointStats, 0, len(s.cfg.Endpoints))
	for _, e := range s.cfg.Endpoints {
		var st EndpointStats
		if s.cfg.Stats != nil {
			st = s.cfg.Stats(e.Name)
		} else {
			s.mu.Lock()
			st = *s.counted[e.Name]
			s.mu.Unlock()
		}
		out := microEndpointStats{Name: e.Name, Subject: e.Subject, QueueGroup: microQueue,
			NumRequests: st.Requests, NumErrors: st.Errors, LastError: st.LastError, ProcessingTime: st.ProcessingTime}
		if st.Requests > 0 {
			out.AverageProcessingTime = st.ProcessingTime / time.Duration(st.Requests)
		}
		if st.Data != nil {
			out.Data, _ = json.Marshal(st.Data)
		}
		eps = append(eps, out)
	}
	return struct {
		microIdentity
		Started   time.Time            `json:"started"`
		Endpoints []microEndpointStats `json:"endpoints"`
	}{s.identity(microStatsType), s.started, eps}
}

// ID is the service instance id that $SRV.PING reports.
func (s *Service) ID() string { return s.id }

// Stop unregisters the service; once it returns, the server no longer
// routes the service's subjects here.
func (s *Service) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	for _, sub := range s.subs {
		if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
			errs = append(errs, err)
		}
	}
	// Unsubscribing only queues the UNSUBs: a round trip makes the server
	// drop the interest before Stop returns, so that nobody's request is
	// routed to a service that will not answer it (a timeout instead of
	// "no responders"). Disconnected, there is nothing to wait for: a
	// reconnect does not restore the interest.
	if s.nc.IsConnected() {
		if err := s.nc.FlushTimeout(2 * time.Second); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bus: stop service %s: %w", s.cfg.Name, err)
	}
	return nil
}
