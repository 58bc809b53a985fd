package api

import "github.com/agentbus/agentbus/events"

// MaxBulk is how many workflows one bulk request acts on at most (its
// default limit).
const MaxBulk = 10_000

// BulkRequest is the body of POST /v1/workflows/bulk (schema
// bulk.request): a control action (events.ActionCancel, ActionPause or
// ActionUnpause) applied, through the same control path as one workflow's,
// to every workflow of the request's tenant (and user, unless an admin's)
// that Filter matches, at most Limit of them (default and most MaxBulk),
// oldest id first. It is plain data, safe to share.
type BulkRequest struct {
	Action string     `json:"action"`
	Reason string     `json:"reason,omitempty"`
	Filter BulkFilter `json:"filter"`
	Limit  int        `json:"limit,omitempty"`
}

// BulkFilter says which workflows a bulk request acts on: every field set
// must match (at least one is).
type BulkFilter struct {
	// Status matches a workflow in any of these states.
	Status []events.State `json:"status,omitempty"`
	// Metadata matches a workflow whose submission's metadata has every
	// one of these keys with its value.
	Metadata map[string]string `json:"metadata,omitempty"`
	// OlderThan matches a workflow created longer ago than this Go
	// duration ("90s", "10m", "24h").
	OlderThan string `json:"older_than,omitempty"`
	// Paused, when set, matches a workflow paused (true) or not (false).
	Paused *bool `json:"paused,omitempty"`
}

// BulkResult answers a bulk request: how many workflows the filter
// matched, how many the action was applied to, how many it did not apply
// to (the orchestrator's 409: already ended, not paused…), how many
// failed (no orchestrator answered), and whether Limit cut the matches
// short. It is plain data, safe to share.
type BulkResult struct {
	Action     string `json:"action"`
	Matched    int    `json:"matched"`
	Applied    int    `json:"applied"`
	NotApplied int    `json:"not_applied"`
	Failed     int    `json:"failed"`
	Limited    bool   `json:"limited,omitempty"`
}
