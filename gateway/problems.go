package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"

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

// queryProblem, headerProblem and pathProblem name a bad parameter or
// header; the message should quote the offending value (see quoted).
func queryProblem(name, format string, args ...any) Problem {
	return Problem{In: InQuery, Name: name, Message: fmt.Sprintf(format, args...)}
}

func headerProblem(name, format string, args ...any) Problem {
	return Problem{In: InHeader, Name: name, Message: fmt.Sprintf(format, args...)}
}

func pathProblem(name, format string, args ...any) Problem {
	return Problem{In: InPath, Name: name, Message: fmt.Sprintf(format, args...)}
}

// bodyProblems turns schema problems (JSON pointers into a body) into
// Problems.
func bodyProblems(ps []schemas.Problem) []Problem {
	out := make([]Problem, 0, len(ps))
	for _, p := range ps {
		out = append(out, Problem{In: InBody, Pointer: p.Pointer, Message: p.Message})
	}
	return out
}

// maxQuoted bounds how much of an offending value a message repeats: a
// client that sent a megabyte does not need it back.
const maxQuoted = 64

// quoted is v as a Go string literal, cut to maxQuoted bytes.
func quoted(v string) string {
	if len(v) > maxQuoted {
		return fmt.Sprintf("%q… (%d bytes)", v[:maxQuoted], len(v))
	}
	return fmt.Sprintf("%q", v)
}

// writeBadRequest answers 400 invalid_request for p, its message the
// problem as one line.
func writeBadRequest(w http.ResponseWriter, p Problem) {
	writeError(w, http.StatusBadRequest, apiError{Code: "invalid_request", Message: p.String(), Problems: []Problem{p}})
}

// writeInvalidBody answers 400 invalid_request for a body that failed its
// schema.
func writeInvalidBody(w http.ResponseWriter, ve *schemas.ValidationError) {
	writeError(w, http.StatusBadRequest, apiError{Code: "invalid_request", Message: ve.Error(), Problems: bodyProblems(ve.Problems)})
}
