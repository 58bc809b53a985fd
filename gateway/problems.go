package gateway

import (
	"fmt"
	"net/http"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/schemas"
)

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
var bodyProblems = api.BodyProblems

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
