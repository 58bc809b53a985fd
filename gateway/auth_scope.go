package gateway

import (
	"context"
	"encoding/json"
)

// Whose workflows a request sees within its tenant. A workflow belongs to
// the user its submission named (the checkpoint's "user"; "" for a
// tenant-wide workflow, such as every one made before users existed), and
// the partition is the one sessions and memory already have:
//
//   - a request that names a user — its token's, or X-Agentbus-User from an
//     admin token or with auth off — sees that user's workflows only, not
//     the tenant-wide ones either: those ran on the tenant-wide memory and
//     sessions, which a user's token does not read (sessions.go);
//   - a client or viewer token without a user sees the tenant-wide
//     workflows only, as it reads only tenant-wide sessions: a user's
//     workflows carry that user's memory and conversation, which no one
//     else's token may read;
//   - an admin token without X-Agentbus-User, or auth off without it, sees
//     every workflow of the tenant (the operator's view; the admin names a
//     user to see exactly what that user sees).
//
// A workflow the request does not see is answered exactly as one that does
// not exist (404, JSON-RPC task not found), is left out of lists, and its
// frames are left out of the tenant feed. Only its id is not private:
// workflow ids are one namespace per tenant, so submitting with another
// user's id is still a 409. A fork runs for its parent's user, whoever
// asked for it, since it carries the parent's step outputs.

// scope is whose workflows one request sees. It is a value, safe for
// concurrent use.
type scope struct {
	// all sees every workflow of the tenant; otherwise only those of user.
	all  bool
	user string
	// none sees nothing: auth is on but no principal vouches for the
	// request (fail closed; the handlers refuse such requests anyway).
	none bool
}

// sees reports whether a workflow run for owner ("" for tenant-wide) is
// visible in the scope. It is the one rule every surface applies.
func (s scope) sees(owner string) bool {
	return !s.none && (s.all || owner == s.user)
}

// scopeOf is the scope of a request's context, as authenticate left it.
func (g *Gateway) scopeOf(ctx context.Context) scope {
	if p, ok := ctx.Value(principalKey{}).(principal); ok {
		return scope{all: p.role == RoleAdmin && p.user == "", user: p.user}
	}
	if g.cfg.Auth.mw.on() {
		return scope{none: true}
	}
	u := userOf(ctx)
	return scope{all: u == "", user: u}
}

// visible reports whether the request of ctx sees the workflow of the
// checkpoint cp (decoded as GET /v1/workflows/{id} shows it).
func (g *Gateway) visible(ctx context.Context, cp map[string]json.RawMessage) bool {
	return g.scopeOf(ctx).sees(ownerOf(cp["user"]))
}

// ownerOf is the user a checkpoint's "user" names, "" for none (absent or
// null). An unreadable one is unreadableOwner, which only an all-seeing
// scope sees (fail closed: it is not tenant-wide).
func ownerOf(user json.RawMessage) string {
	if len(user) == 0 {
		return ""
	}
	var u string
	if json.Unmarshal(user, &u) != nil {
		return unreadableOwner
	}
	return u
}

// unreadableOwner is no user id (subjects.ValidUser refuses NUL).
const unreadableOwner = "\x00"
