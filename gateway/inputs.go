package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/permissions"
)

// checkPermissions answers 403 permission_denied, naming the refused
// step's capability by its JSON pointer and the rule, when the tool
// permissions table forbids an explicit plan's step to the tenant and the
// token's role, and reports false. Nothing of a refused plan is stored.
func (g *Gateway) checkPermissions(w http.ResponseWriter, r *http.Request, tenant string, plan *events.Plan) bool {
	if plan == nil {
		return true
	}
	var de *permissions.DeniedError
	if _, err := g.cfg.Permissions.Plan(tenant, string(roleOf(r.Context())), *plan); !errors.As(err, &de) {
		return true
	}
	writeError(w, http.StatusForbidden, apiError{Code: events.CodePermissionDenied, Rule: de.Rule,
		Message:  fmt.Sprintf("step %q may not run %s: refused by the tool permissions rule %s", de.StepID, de.Capability, de.Rule),
		Problems: []Problem{{In: InBody, Pointer: de.Pointer(), Message: fmt.Sprintf("%s is refused by %s", de.Capability, de.Rule)}}})
	return false
}

// inputsTimeout bounds the registry read that checks a plan's inputs; past
// it the submission goes on and the orchestrator checks them instead.
const inputsTimeout = 2 * time.Second

// checkInputs answers 400 invalid_input, naming each problem by its JSON
// pointer in the body (/plan/steps/N/input/…), when an explicit plan's
// step has an input that does not fit the input schema its capability's
// agent registered (an MCP tool's), and reports false. A registry that
// cannot be read refuses nothing here: the orchestrator checks again
// before dispatch, and fails the workflow with the same pointer.
func (g *Gateway) checkInputs(w http.ResponseWriter, r *http.Request, plan *events.Plan) bool {
	if plan == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(r.Context(), inputsTimeout)
	defer cancel()
	var ie *discovery.InputError
	if err := g.registry.CheckInputs(ctx, *plan); !errors.As(err, &ie) {
		return true
	}
	problems := make([]Problem, len(ie.Problems))
	for i, p := range ie.Problems {
		problems[i] = Problem{In: InBody, Pointer: fmt.Sprintf("/plan/steps/%d/input%s", ie.Index, p.Pointer), Message: p.Message}
	}
	writeError(w, http.StatusBadRequest, apiError{Code: events.CodeInvalidInput, Message: ie.Error(), Problems: problems})
	return false
}
