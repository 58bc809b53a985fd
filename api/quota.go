package api

import (
	"errors"
	"fmt"
	"time"
)

// The quotas a gateway may hold a tenant to (#23), as Quota.Name says
// them. A quota bounds what the tenant has at once, not a rate.
const (
	// QuotaRunning bounds the tenant's workflows not yet ended:
	// submitted (stored, or recorded by an orchestrator), working or
	// waiting for input.
	QuotaRunning = "running"
	// QuotaQueuedSteps bounds the tenant's step requests stored and not
	// yet done: waiting for a worker, being run, or waiting for admission
	// to a busy capability.
	QuotaQueuedSteps = "queued_steps"
	// QuotaUploadBytes bounds the bytes of the tenant's uploaded documents
	// waiting in the uploads store to be indexed.
	QuotaUploadBytes = "upload_bytes"
)

// Quota is a quota a request would pass: which (Name, a Quota… constant),
// its Limit, the tenant's Current value, and for an upload the bytes it
// would add (Requested). It is the "quota" of a 429 quota_exceeded error
// answer; plain data, safe to share.
type Quota struct {
	Name      string `json:"name"`
	Limit     int64  `json:"limit"`
	Current   int64  `json:"current"`
	Requested int64  `json:"requested,omitempty"`
}

// ErrQuotaExceeded is wrapped by *QuotaError.
var ErrQuotaExceeded = errors.New("api: quota exceeded")

// QuotaError says that a tenant's request was refused for a quota, and
// when to try again. The answer over HTTP is 429 quota_exceeded with
// Retry-After.
type QuotaError struct {
	Tenant     string
	Quota      Quota
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string { return "api: " + e.Reason() }

// Reason is the refusal as a sentence for a person: the tenant, its
// current value and the quota, and when to try again.
func (e *QuotaError) Reason() string {
	q := e.Quota
	switch q.Name {
	case QuotaRunning:
		return fmt.Sprintf("tenant %s has %d workflows running, its quota is %d: try again when one has ended", e.Tenant, q.Current, q.Limit)
	case QuotaQueuedSteps:
		return fmt.Sprintf("tenant %s has %d steps queued or running, its quota is %d: try again when its queue has drained", e.Tenant, q.Current, q.Limit)
	case QuotaUploadBytes:
		return fmt.Sprintf("tenant %s has %d bytes of uploads waiting to be indexed, and %d more would pass its quota of %d: try again when they are indexed",
			e.Tenant, q.Current, q.Requested, q.Limit)
	}
	return fmt.Sprintf("tenant %s is at its %s quota: %d of %d", e.Tenant, q.Name, q.Current, q.Limit)
}

// Unwrap lets errors.Is(err, ErrQuotaExceeded) hold.
func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }
