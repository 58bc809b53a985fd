package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/micro"
)

// ServiceConfig describes a NATS micro service, so that standard NATS
// tooling ($SRV.PING, $SRV.INFO, $SRV.STATS; `nats micro ls/info/stats`)
// sees the process.
type ServiceConfig struct {
	// Name matches ^[A-Za-z0-9_-]+$; Version is semver.
	Name, Version, Description string
	Metadata                   map[string]string
	Endpoints                  []Endpoint
	// Stats, if set, is reported as each endpoint's "data" in $SRV.STATS.
	Stats func(endpoint string) any
}

// Endpoint is one request/reply endpoint of a service.
type Endpoint struct {
	Name, Subject string
	Metadata      map[string]string
	// Handle answers a request; an error is sent as a micro error reply.
	Handle func(ctx context.Context, request []byte) ([]byte, error)
}

// Service is a running micro service. Stop is safe to call twice.
type Service struct {
	svc micro.Service
}

// AddService registers a micro service on the bus's connection.
func (b *Bus) AddService(ctx context.Context, cfg ServiceConfig) (*Service, error) {
	mc := micro.Config{
		Name: cfg.Name, Version: cfg.Version, Description: cfg.Description, Metadata: cfg.Metadata,
	}
	if cfg.Stats != nil {
		mc.StatsHandler = func(e *micro.Endpoint) any { return cfg.Stats(e.Name) }
	}
	svc, err := micro.AddService(b.nc, mc)
	if err != nil {
		return nil, fmt.Errorf("bus: micro service %s: %w", cfg.Name, err)
	}
	for _, e := range cfg.Endpoints {
		h := e.Handle
		err := svc.AddEndpoint(e.Name, micro.HandlerFunc(func(r micro.Request) {
			out, err := h(ctx, r.Data())
			if err != nil {
				_ = r.Error("500", err.Error(), nil)
				return
			}
			_ = r.Respond(out)
		}), micro.WithEndpointSubject(e.Subject), micro.WithEndpointMetadata(e.Metadata))
		if err != nil {
			_ = svc.Stop()
			return nil, fmt.Errorf("bus: micro endpoint %s: %w", e.Name, err)
		}
	}
	return &Service{svc: svc}, nil
}

// ID is the service instance id that $SRV.PING reports.
func (s *Service) ID() string { return s.svc.Info().ID }

// Stop unregisters the service.
func (s *Service) Stop() error {
	if s.svc.Stopped() {
		return nil
	}
	if err := s.svc.Stop(); err != nil && !errors.Is(err, micro.ErrServiceNameRequired) {
		return fmt.Errorf("bus: stop service: %w", err)
	}
	return nil
}
