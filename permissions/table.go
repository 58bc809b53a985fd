package permissions

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// Any is the tenant or role whose rules apply to every tenant or role the
// table does not name.
const Any = "*"

// Rules are one tenant's and role's lists of capability glob patterns
// (path.Match syntax: *, ?, [a-z]).
type Rules struct {
	// Allow, when not nil, is the only capabilities that may run; an
	// empty list allows none.
	Allow []string `json:"allow,omitempty"`
	// Deny lists capabilities that never run; it wins over Allow.
	Deny []string `json:"deny,omitempty"`
	// RequiresConfirmation lists capabilities whose steps wait for an
	// approval, showing their input, before they are dispatched.
	RequiresConfirmation []string `json:"requires_confirmation,omitempty"`
}

// Table holds Rules by tenant and role; Any stands for the others. The
// nil Table allows everything. A Table is read-only once made and safe
// for concurrent use.
type Table map[string]map[string]Rules

// ErrInvalid is wrapped by every error Parse and Validate return.
var ErrInvalid = errors.New("permissions: invalid table")

// Parse decodes a table (--tool-permissions FILE or
// AGENTBUS_TOOL_PERMISSIONS): checked against the schema
// schemas.ToolPermissions, whose *schemas.ValidationError names the JSON
// pointer of every problem, then by Validate.
func Parse(data []byte) (Table, error) {
	if err := schemas.Validate(schemas.ToolPermissions, data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var t Table
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return t, t.Validate()
}

// Validate reports every tenant or role that is not a subject token (nor
// Any) and every pattern that does not compile.
func (t Table) Validate() error {
	var errs []error
	for _, tenant := range slices.Sorted(maps.Keys(t)) {
		if tenant != Any {
			if err := subjects.ValidTenant(tenant); err != nil {
				errs = append(errs, fmt.Errorf("%w: tenant %q: %w", ErrInvalid, tenant, err))
			}
		}
		for _, role := range slices.Sorted(maps.Keys(t[tenant])) {
			if role != Any && subjects.ValidUser(role) != nil {
				errs = append(errs, fmt.Errorf("%w: /%s/%s: a role is a lowercase token such as client or admin", ErrInvalid, tenant, role))
			}
			r := t[tenant][role]
			for _, l := range []struct {
				name string
				pats []string
			}{{"allow", r.Allow}, {"deny", r.Deny}, {"requires_confirmation", r.RequiresConfirmation}} {
				for i, p := range l.pats {
					if _, err := path.Match(p, ""); err != nil || p == "" {
						errs = append(errs, fmt.Errorf("%w: /%s/%s/%s/%d: %q is not a glob pattern", ErrInvalid, tenant, role, l.name, i, p))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Verdict is what the table says of one capability.
type Verdict int

// Verdicts, from the most permissive.
const (
	Allowed Verdict = iota
	Confirm
	Denied
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case Allowed:
		return "allowed"
	case Confirm:
		return "requires confirmation"
	case Denied:
		return "denied"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// Decision is the table's verdict on a capability and the rule that made
// it, in words a person can find in the table: `acme/client deny
// "tool_files_delete*"`; "" when nothing in the table speaks of it.
type Decision struct {
	Verdict Verdict
	Rule    string
}

// Check decides whether capability may run in a workflow of tenant
// submitted with role ("" when the gateway knew none). The rules are the
// first present of tenant/role, tenant/*, */role and */*; none allows
// everything. Within them a deny pattern refuses, then an allow list that
// does not match, then a requires_confirmation pattern asks for a
// confirmation.
func (t Table) Check(tenant, role, capability string) Decision {
	r, who, ok := t.rules(tenant, role)
	if !ok {
		return Decision{Verdict: Allowed}
	}
	if p, ok := match(r.Deny, capability); ok {
		return Decision{Verdict: Denied, Rule: fmt.Sprintf("%s deny %q", who, p)}
	}
	if r.Allow != nil {
		if _, ok := match(r.Allow, capability); !ok {
			return Decision{Verdict: Denied, Rule: fmt.Sprintf("%s allow %s (%s matches none)", who, quoteAll(r.Allow), capability)}
		}
	}
	if p, ok := match(r.RequiresConfirmation, capability); ok {
		return Decision{Verdict: Confirm, Rule: fmt.Sprintf("%s requires_confirmation %q", who, p)}
	}
	return Decision{Verdict: Allowed}
}

// rules returns the rules that apply and whose they are ("acme/client",
// "acme/*", "*/client", "*/*").
func (t Table) rules(tenant, role string) (Rules, string, bool) {
	if role == "" {
		role = Any
	}
	for _, tn := range []string{tenant, Any} {
		roles, ok := t[tn]
		if !ok {
			continue
		}
		for _, rl := range []string{role, Any} {
			if r, ok := roles[rl]; ok {
				return r, tn + "/" + rl, true
			}
		}
	}
	return Rules{}, "", false
}

func match(patterns []string, capability string) (string, bool) {
	for _, p := range patterns {
		if ok, _ := path.Match(p, capability); ok {
			return p, true
		}
	}
	return "", false
}

func quoteAll(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = fmt.Sprintf("%q", p)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
