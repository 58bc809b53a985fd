package api

import (
	"encoding/json"

	"github.com/agentbus/agentbus/schemas"
)

// Where a Problem is, its In.
const (
	InQuery  = "query"  // a URL query parameter, named by Name
	InHeader = "header" // a request header, named by Name
	InPath   = "path"   // a path parameter ({id}), named by Name
	InBody   = "body"   // the JSON body, at the JSON pointer Pointer
)

// Problem is one thing wrong with a request, as every 4xx error answer
// lists them in error.problems: where it is (In), which parameter or header
// (Name, for query, header and path) or which value of the body (Pointer, a
// JSON pointer: "" is the whole document), and what is wrong with it, the
// offending value included (Message). Clients read it to point at the exact
// field; it is a plain value, safe to share.
type Problem struct {
	In      string `json:"in"`
	Name    string `json:"name,omitempty"`
	Pointer string `json:"pointer,omitempty"`
	Message string `json:"message"`
}

// MarshalJSON always writes a body problem's pointer, even "" (the whole
// document), and never a pointer elsewhere.
func (p Problem) MarshalJSON() ([]byte, error) {
	if p.In != InBody {
		type plain Problem
		q := plain(p)
		q.Pointer = ""
		return json.Marshal(q)
	}
	return json.Marshal(struct {
		In      string `json:"in"`
		Pointer string `json:"pointer"`
		Message string `json:"message"`
	}{p.In, p.Pointer, p.Message})
}

// String is the problem as one line: "query parameter from: …".
func (p Problem) String() string {
	switch p.In {
	case InQuery:
		return "query parameter " + p.Name + ": " + p.Message
	case InPath:
		return "path parameter " + p.Name + ": " + p.Message
	case InHeader:
		return "header " + p.Name + ": " + p.Message
	}
	ptr := p.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return ptr + ": " + p.Message
}

// ErrorResponse is the body of every error answer of the HTTP API (not of
// JSON-RPC, which has its own): {"error": {"code", "message", "problems"}}.
// It is plain data, safe to share.
type ErrorResponse struct {
	Error Error `json:"error"`
}

// Error is what went wrong, in an ErrorResponse. Code is a stable word a
// program may switch on, Message a sentence for a person, Problems what
// exactly was wrong with the request, if anything was, and Quota the quota
// a quota_exceeded request would pass. It is plain data (not a Go error),
// safe to share.
type Error struct {
	Code     string    `json:"code"`
	Message  string    `json:"message"`
	Problems []Problem `json:"problems,omitempty"`
	Quota    *Quota    `json:"quota,omitempty"`
	// Rule is the tool permissions rule that refused the request (code
	// permission_denied).
	Rule string `json:"rule,omitempty"`
}

// BodyProblems turns the problems of a body that failed its schema (JSON
// pointers into the body) into Problems in the body.
func BodyProblems(ps []schemas.Problem) []Problem {
	out := make([]Problem, 0, len(ps))
	for _, p := range ps {
		out = append(out, Problem{In: InBody, Pointer: p.Pointer, Message: p.Message})
	}
	return out
}
