package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// shownLog is what the workflow page's event log holds (window.__agentbus).
type shownLog struct {
	Offsets     []uint64 `json:"offsets"`
	Types       []string `json:"types"`
	Resets      int      `json:"resets"`
	Duplicates  int      `json:"duplicates"`
	Connections int      `json:"connections"`
	Link        string   `json:"link"`
}

// sameAsStored reads the workflow page's log and fails the test unless it
// holds exactly the workflow's stored events, in order, each once, with
// contiguous offsets (the test's stack runs one workflow at a time).
func (d *dash) sameAsStored(t *testing.T, tenant, id string) shownLog {
	t.Helper()
	var got shownLog
	d.eval(t, `window.__agentbus.log()`, &got)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	stored, err := d.storedAs(ctx, tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	var want []uint64
	for _, e := range stored {
		want = append(want, e.Offset)
	}
	if !slices.Equal(got.Offsets, want) {
		t.Fatalf("the page shows offsets %v\nthe stream holds   %v", got.Offsets, want)
	}
	for i := 1; i < len(want); i++ {
		if want[i] != want[i-1]+1 {
			t.Fatalf("stored offsets not contiguous at %d: %v", i, want)
		}
	}
	return got
}

// TestDashboardSurvivesGatewayRestart kills the gateway under a page that
// follows a workflow of sleep steps and starts a new one on the same port:
// the page reconnects from its last offset, and its event log ends
// identical to the workflow's stored events, none missing, none twice.
func TestDashboardSurvivesGatewayRestart(t *testing.T) {
	d := startDash(t, stackOptions{}, acmeClient)
	// The page and its script load first, so that the workflow is young
	// when the page follows it.
	d.open(t, "/", `[data-testid="workflows"]`)
	start := time.Now()
	id := d.submitPlan(t, acmeClient, "dash-restart", sleepChain(12, 300)...)
	d.run(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`history.pushState(null, '', '/workflows/%s'); dispatchEvent(new PopStateEvent('popstate'))`, id)))
	d.until(t, `window.__agentbus?.log().offsets.length >= 4`)
	t.Logf("following after %s", time.Since(start).Round(time.Millisecond))
	var before shownLog
	d.eval(t, `window.__agentbus.log()`, &before)
	if slices.Contains(before.Types, "complete") {
		t.Fatal("the workflow ended before the restart: make its steps longer")
	}
	d.restartGateway()
	// The page notices, reconnects and follows to the end.
	d.until(t, `window.__agentbus.log().link === 'done'`)
	d.visible(t, `.page-head .pill[data-state="completed"]`)
	after := d.sameAsStored(t, "acme", id)
	if after.Connections < 2 || after.Resets != 0 {
		t.Fatalf("connections %d, resets %d: want a reconnect and no reset", after.Connections, after.Resets)
	}
	t.Logf("%d events shown once each over %d connections (%d events before the restart, %d duplicates dropped)",
		len(after.Offsets), after.Connections, len(before.Offsets), after.Duplicates)
	d.shot(t, "workflow-after-restart")
}

// cutProxy forwards TCP connections to a target until cut closes them all
// at once, as a network that drops does (the browser sees 1006, not a
// close frame); new connections go through again.
type cutProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	t.Cleanup(func() { _ = l.Close(); <-done; p.cut() })
	return p
}

func (p *cutProxy) pipe(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, u)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
	_, _ = io.Copy(c, u)
	_ = c.Close()
}

// cut drops every open connection.
func (p *cutProxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	n := len(p.conns) / 2
	p.conns = nil
	return n
}

// TestDashboardSurvivesNetworkDrop drops the page's connections twice while
// it follows a workflow: it reconnects from its offset each time and ends
// with the stream's events, each once.
func TestDashboardSurvivesNetworkDrop(t *testing.T) {
	d := startDash(t, stackOptions{}, acmeClient)
	p := startCutProxy(t, d.Addr)
	page := "http://" + p.l.Addr().String()
	d.run(t, chromedp.Navigate(page+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="workflows"]`)))
	id := d.submitPlan(t, acmeClient, "dash-drop", sleepChain(12, 300)...)
	d.run(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`history.pushState(null, '', '/workflows/%s'); dispatchEvent(new PopStateEvent('popstate'))`, id)))
	for _, after := range []int{4, 20} {
		d.until(t, fmt.Sprintf(`window.__agentbus?.log().offsets.length >= %d && window.__agentbus.log().link === 'live'`, after))
		if n := p.cut(); n == 0 {
			t.Fatal("no connection to cut")
		}
	}
	d.until(t, `window.__agentbus.log().link === 'done'`)
	got := d.sameAsStored(t, "acme", id)
	if got.Connections < 3 || got.Resets != 0 {
		t.Fatalf("connections %d, resets %d: want two reconnects and no reset", got.Connections, got.Resets)
	}
	t.Logf("%d events shown once each over %d connections", len(got.Offsets), got.Connections)
}
