package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// page is what a test page's script collected, as JSON.
type page struct {
	Events    []event `json:"events"`
	Connected int     `json:"connected"`
	Resets    int     `json:"resets"`
	Ended     bool    `json:"ended"`
}

// pageScript installs window.st (the page's state) and window.until(pred),
// a promise resolved once pred(st) holds; clients call notify() on every
// change. body starts the client.
const pageScript = `(() => {
  const st = {events: [], connected: 0, resets: 0, ended: false};
  const waiters = [];
  const notify = () => { for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i]()) waiters.splice(i, 1); };
  window.st = st;
  window.until = (pred) => new Promise((resolve) => {
    const w = () => { if (pred(st)) { resolve(st); return true; } return false; };
    if (!w()) waiters.push(w);
  });
  %s
  return true;
})()`

// eventSourceClient follows a workflow with the README's EventSource
// function, as written: the browser alone reconnects (with Last-Event-ID),
// and ended turns true when it has given up for good (readyState CLOSED:
// the gateway answered 204).
const eventSourceClient = `
  %s
  const es = follow(%q, (type, id, frame) => {
    if (type === 'connected') st.connected++;
    else if (type === 'reset') st.resets++;
    else st.events.push({offset: Number(id), type: type});
    notify();
  });
  es.addEventListener('error', () => { if (es.readyState === EventSource.CLOSED) { st.ended = true; notify(); } });
`

// webSocketClient follows a workflow with the README's WebSocket
// function, as written: it reconnects after any close but a normal one with
// from (its last event offset) and epoch.
const webSocketClient = `
  %s
  followWS(%q, (f) => {
    if (f.type === 'connected') st.connected++;
    else if (f.type === 'reset') st.resets++;
    else if (f.offset > 0) st.events.push({offset: f.offset, type: f.type});
    notify();
  }, () => { st.ended = true; notify(); });
`

func TestBrowserEventSourceResumesAcrossGatewayRestart(t *testing.T) {
	block := readmeBlockLang(t, "browser-eventsource", "js")
	testBrowserResume(t, "es-restart", func(id string) string { return fmt.Sprintf(eventSourceClient, block, id) })
}

func TestBrowserWebSocketResumesAcrossGatewayRestart(t *testing.T) {
	block := readmeBlockLang(t, "browser-websocket", "js")
	testBrowserResume(t, "ws-restart", func(id string) string { return fmt.Sprintf(webSocketClient, block, id) })
}

// testBrowserResume runs a workflow of sleep steps, follows it from a page
// in a real browser with the client that script starts, restarts the
// gateway mid-workflow, and checks that the page assembled every stored
// event exactly once, in order, and that its connection ended after the
// terminal event for good — no replay.
func testBrowserResume(t *testing.T, workflow string, script func(id string) string) {
	s := startStack(t)
	ctx := browser(t)
	tctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if err := s.submitSleeps(tctx, workflow, 8, 400); err != nil {
		t.Fatal(err)
	}
	// The page is on the gateway's own origin, as a dashboard's would be.
	if err := chromedp.Do(tctx, chromedp.Navigate(s.base()+"/healthz")); err != nil {
		t.Fatal(err)
	}
	if err := await(tctx, fmt.Sprintf(pageScript, script(workflow)), nil); err != nil {
		t.Fatalf("page script: %v", err)
	}
	var before page
	if err := await(tctx, "until(s => s.events.length >= 3)", &before); err != nil {
		t.Fatalf("waiting for the first events: %v", err)
	}
	if terminalIn(before.Events) {
		t.Fatalf("the workflow ended before the gateway restart (%v): make it longer", before.Events)
	}
	s.restartGateway()
	var got page
	if err := await(tctx, "until(s => s.ended)", &got); err != nil {
		var now page
		_ = await(ctx, "Promise.resolve(st)", &now)
		t.Fatalf("waiting for the stream to end for good: %v; page has %+v", err, now)
	}
	want, err := s.stored(tctx, workflow)
	if err != nil {
		t.Fatal(err)
	}
	if got.Connected < 2 {
		t.Errorf("page connected %d times, want at least 2 (before and after the restart)", got.Connected)
	}
	if got.Resets != 0 {
		t.Errorf("page got %d reset frames, want none: its cursor was valid", got.Resets)
	}
	if diff := compare(got.Events, want); diff != "" {
		t.Fatalf("page's events differ from the stored ones: %s\npage:   %v\nstored: %v", diff, got.Events, want)
	}
	t.Logf("page assembled %d events over %d connections", len(got.Events), got.Connected)
}

func terminalIn(evs []event) bool {
	for _, e := range evs {
		if e.Type == "complete" || e.Type == "error" || e.Type == "cancelled" {
			return true
		}
	}
	return false
}

// compare says how got differs from want (offsets and types, in order):
// the first duplicate, gap or mismatch, or "" if they are the same.
func compare(got, want []event) string {
	seen := map[uint64]bool{}
	for i, e := range got {
		if seen[e.Offset] {
			return fmt.Sprintf("offset %d received twice (event #%d)", e.Offset, i)
		}
		seen[e.Offset] = true
	}
	var b strings.Builder
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			fmt.Fprintf(&b, "missing %v and %d more after #%d", want[i], len(want)-i-1, i)
		case i >= len(want):
			fmt.Fprintf(&b, "extra %v at #%d", got[i], i)
		case got[i] != want[i]:
			fmt.Fprintf(&b, "#%d is %v, want %v", i, got[i], want[i])
		default:
			continue
		}
		return b.String()
	}
	return ""
}
