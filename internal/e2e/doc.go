// Package e2e holds end-to-end tests that drive a whole agentbus stack —
// embedded NATS, orchestrator, workers and gateway — from clients nobody on
// the project wrote: a real headless Chromium with its native EventSource
// and WebSocket. It has no non-test code.
//
// The browser is Debian's chromium (or the binary named by
// AGENTBUS_CHROMIUM); `.ci/run` installs it. A machine without one fails
// these tests with a message saying so, unless AGENTBUS_SKIP_BROWSER=1.
package e2e
