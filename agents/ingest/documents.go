package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/subjects"
)

// Document operations, the last token of their subjects.
const (
	OpList   = "list"
	OpGet    = "get"
	OpDelete = "delete"
)

// DocumentRequest is the body of a document operation: ID for get and
// delete, After and Limit for list.
type DocumentRequest struct {
	ID    string `json:"id,omitempty"`
	After string `json:"after,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// Deleted answers a delete.
type Deleted struct {
	ID     string `json:"id"`
	Chunks int    `json:"chunks"`
}

// Serve answers the document operations of every tenant on the index the
// agent writes (queue group: any process running the agent may answer),
// until ctx ends or the returned service is stopped. Not found is a
// micro error 404, a bad request 400.
func (a *Agent) Serve(ctx context.Context, b *bus.Bus) (*bus.Service, error) {
	ep := func(op string, h func(ctx context.Context, tenant string, req DocumentRequest) (any, error)) bus.Endpoint {
		return bus.Endpoint{Name: "documents-" + op, Subject: subjects.DocumentsFilter(op),
			HandleSubject: func(ctx context.Context, subject string, body []byte) ([]byte, error) {
				p, err := subjects.Parse(subject)
				if err != nil {
					return nil, &bus.ServiceError{Code: 400, Message: err.Error()}
				}
				var req DocumentRequest
				if len(body) > 0 {
					if err := json.Unmarshal(body, &req); err != nil {
						return nil, &bus.ServiceError{Code: 400, Message: "request body: " + err.Error()}
					}
				}
				out, err := h(ctx, p.Tenant, req)
				switch {
				case errors.Is(err, retrieval.ErrNotFound):
					return nil, &bus.ServiceError{Code: 404, Message: err.Error()}
				case err != nil:
					return nil, err
				}
				return json.Marshal(out)
			}}
	}
	needID := func(req DocumentRequest) error {
		if req.ID == "" {
			return &bus.ServiceError{Code: 400, Message: "/id is required"}
		}
		return nil
	}
	return b.AddService(ctx, bus.ServiceConfig{
		Name: "agentbus-documents", Version: "1.0.0",
		Description: "agentbus document operations (list, get, delete) on the tenants' search indexes",
		Endpoints: []bus.Endpoint{
			ep(OpList, func(ctx context.Context, tenant string, req DocumentRequest) (any, error) {
				if req.Limit < 0 || req.Limit > retrieval.MaxListLimit {
					return nil, &bus.ServiceError{Code: 400, Message: fmt.Sprintf("/limit %d: want 1 to %d", req.Limit, retrieval.MaxListLimit)}
				}
				return a.cfg.Store.List(ctx, tenant, retrieval.ListOptions{After: req.After, Limit: req.Limit})
			}),
			ep(OpGet, func(ctx context.Context, tenant string, req DocumentRequest) (any, error) {
				if err := needID(req); err != nil {
					return nil, err
				}
				return a.cfg.Store.Document(ctx, tenant, req.ID)
			}),
			ep(OpDelete, func(ctx context.Context, tenant string, req DocumentRequest) (any, error) {
				if err := needID(req); err != nil {
					return nil, err
				}
				n, err := a.cfg.Store.Delete(ctx, tenant, req.ID)
				return Deleted{ID: req.ID, Chunks: n}, err
			}),
		},
	})
}
