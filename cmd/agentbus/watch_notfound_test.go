package main

import (
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

func TestErrorsList(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"errors":[{"in":"query","name":"from","message":"not a number"},{"in":"header","name":"Last-Event-ID","message":"bad"}]}`,
			"query parameter from: not a number; header Last-Event-ID: bad"},
		{`{"errors":[{"message":"no workflow \"x\""}]}`, `no workflow "x"`},
		{`not json`, ""},
	} {
		if got := errorsList([]byte(tc.body)); got != tc.want {
			t.Errorf("errorsList(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}
