package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWatchUnknownWorkflow: watch of an id the gateway does not know
// answers at once with the gateway's 404 message and exit 3, no retries.
func TestWatchUnknownWorkflow(t *testing.T) {
	s := startServe(t, t.TempDir())
	code, stderr, took := runFor(t, 30*time.Second, "watch", "--url", s.info.HTTPURL, "nosuchworkflow")
	if code != exitUsage {
		t.Fatalf("exit %d, stderr %q: want %d", code, stderr, exitUsage)
	}
	// The gateway's message, whatever the shape of its error body.
	for _, want := range []string{"agentbus: workflow nosuchworkflow: 404 Not Found: ", `no workflow "nosuchworkflow"`, "(tenant default at " + s.info.HTTPURL + ")"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if took > 2*time.Second {
		t.Errorf("took %s: watch retried an unknown workflow", took)
	}
}

// An error answer of the shape {"errors": [{in, name, message}]} reads
// as "query parameter from: …; header …: …".
func TestErrorsList(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"errors":[{"in":"query","name":"from","message":"not a number"},{"in":"header","name":"Last-Event-ID","message":"bad"}]}`,
			"400 Bad Request: query parameter from: not a number; header Last-Event-ID: bad"},
		{`{"errors":[{"message":"no workflow \"x\""}]}`, `400 Bad Request: no workflow "x"`},
		{`not json`, "400 Bad Request: not json"},
	} {
		resp := &http.Response{StatusCode: 400, Status: "400 Bad Request", Body: io.NopCloser(strings.NewReader(tc.body))}
		if got := apiErr(resp).Error(); got != tc.want {
			t.Errorf("apiErr(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}
