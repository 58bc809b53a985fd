package gateway

import "github.com/agentbus/agentbus/api"

// The gateway's wire types and headers are package api's, shared with the
// Go SDK; these names keep the gateway's code and its users' as they were.
type (
	// SubmitRequest is api.SubmitRequest, the body of POST /v1/workflows.
	SubmitRequest = api.SubmitRequest
	// SubmitResponse is api.SubmitResponse, the answer to a submission.
	SubmitResponse = api.SubmitResponse
	// ForkRequest is api.ForkRequest, the body of POST …/fork.
	ForkRequest = api.ForkRequest
	// ControlRequest is api.ControlRequest, the body of POST …/cancel,
	// …/resume and …/approve.
	ControlRequest = api.ControlRequest
	// Problem is api.Problem, one thing wrong with a request.
	Problem = api.Problem

	// apiError is what went wrong, in every error answer (errors.go).
	apiError = api.Error
)

// Where a Problem is, its In (api.InQuery …).
const (
	InQuery  = api.InQuery
	InHeader = api.InHeader
	InPath   = api.InPath
	InBody   = api.InBody
)

// TenantHeader is api.TenantHeader: it names the tenant of a request
// (the tenant with auth off, or the one an admin token acts on); absent
// means DefaultTenant.
const TenantHeader = api.TenantHeader

// DefaultTenant is api.DefaultTenant, the tenant of requests that name
// none.
const DefaultTenant = api.DefaultTenant

// UserHeader is api.UserHeader: it names the user a request acts for when
// the token does not (an admin token, or auth off): its submissions run
// for that user and it sees that user's workflows and sessions only. A
// client or viewer token's own user, if any, always wins and the header is
// ignored for it.
const UserHeader = api.UserHeader
