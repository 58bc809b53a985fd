package vespa

import (
	"fmt"
	"strings"
)

// Vespa's query error codes that callers may want to tell apart (from
// com.yahoo.container.protect.Error, as rendered in root.errors[].code).
const (
	// CodeTimeout is a query that ran out of time.
	CodeTimeout = 12
	// CodeBackendCommunication is a content node that could not be reached.
	CodeBackendCommunication = 10
	// CodeInvalidQueryParameter is a query Vespa could not parse.
	CodeInvalidQueryParameter = 4
)

// Error is one failure reported by Vespa, with what Vespa said. It wraps
// ErrFeed (Op "feed") or ErrQuery (Op "search" and "count"). It is a
// value: safe to share once returned.
type Error struct {
	// Op is "feed", "delete" (writes), "search", "count" or "visit".
	Op string
	// DocType is the document type the request addressed.
	DocType string
	// ChunkID is the chunk a feed error belongs to.
	ChunkID string
	// Status is the HTTP status code (0 when the request never got one).
	Status int
	// Code is Vespa's error code from root.errors (e.g. CodeTimeout);
	// 0 for Document v1 errors, which carry only a message.
	Code int
	// Summary is Vespa's short error summary, e.g. "Timed out".
	Summary string
	// Message is Vespa's message: Document v1's "message", or every
	// root.errors message joined by "; ".
	Message string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("vespa: ")
	b.WriteString(e.Op)
	if e.ChunkID != "" {
		fmt.Fprintf(&b, " chunk %q", e.ChunkID)
	}
	if e.DocType != "" {
		fmt.Fprintf(&b, " (%s)", e.DocType)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != 0 {
		fmt.Fprintf(&b, ": code %d", e.Code)
		if e.Summary != "" {
			fmt.Fprintf(&b, " (%s)", e.Summary)
		}
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap lets errors.Is(err, ErrFeed) (feed, delete) or errors.Is(err,
// ErrQuery) (search, count, visit) hold.
func (e *Error) Unwrap() error {
	if e.Op == "feed" || e.Op == "delete" {
		return ErrFeed
	}
	return ErrQuery
}

// Timeout reports whether Vespa gave up for lack of time (code 12 or
// HTTP 504).
func (e *Error) Timeout() bool { return e.Code == CodeTimeout || e.Status == 504 }

// Retryable reports whether the same request may succeed later: Vespa
// was overloaded (429), unavailable (503) or timed out.
func (e *Error) Retryable() bool { return e.Status == 429 || e.Status == 503 || e.Timeout() }
