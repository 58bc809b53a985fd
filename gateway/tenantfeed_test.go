package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/agentbus/agentbus/gateway"
	wsproto "github.com/agentbus/agentbus/gateway/ws"
	"github.com/agentbus/agentbus/subjects"
)

// feedEntry is one workflow_status frame of the tenant feed, as a client
// decodes it.
type feedEntry struct {
	ID    string // the SSE id, "" on the WebSocket
	Frame wsFrame
	WS    gateway.WorkflowStatus
}

func (e feedEntry) String() string {
	return fmt.Sprintf("%d:%s:%s/%s", e.Frame.Offset, e.WS.WorkflowID, e.WS.Event, e.WS.State)
}

// decodeFeed decodes one SSE frame of the tenant feed; connected and reset
// frames are checked by the caller.
func decodeFeed(t testing.TB, sf sseFrame) feedEntry {
	t.Helper()
	var e feedEntry
	e.ID = sf.ID
	if err := json.Unmarshal([]byte(sf.Data), &e.Frame); err != nil {
		t.Fatalf("frame %s %s: %v", sf.ID, sf.Data, err)
	}
	if err := json.Unmarshal(e.Frame.Data, &e.WS); err != nil {
		t.Fatalf("frame %s data %s: %v", sf.ID, e.Frame.Data, err)
	}
	if sf.Event != gateway.FrameWorkflowStatus || sf.ID != strconv.FormatUint(e.Frame.Offset, 10) {
		t.Fatalf("frame event %q id %q offset %d: want workflow_status with id = offset", sf.Event, sf.ID, e.Frame.Offset)
	}
	return e
}

// readFeed reads the tenant feed at path over SSE until stop says enough
// (given every entry so far) or the deadline passes (fatal). It checks the
// opening `connected` frame and returns the entries and connected's data.
func (s *stack) readFeed(t testing.TB, path string, stop func([]feedEntry) bool, header ...string) (gateway.FeedConnected, []feedEntry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var c gateway.FeedConnected
	var out []feedEntry
	n := 0
	st, err := s.readSSE(ctx, path, func(sf sseFrame, _ []string) error {
		if sf.Event == "" {
			return nil // a comment
		}
		n++
		if n == 1 {
			if sf.Event != gateway.FrameConnected || sf.ID != "" {
				return fmt.Errorf("first frame %q (id %q), want an id-less connected", sf.Event, sf.ID)
			}
			if err := json.Unmarshal([]byte(sf.Data), &c); err != nil {
				return err
			}
			if stop(out) {
				return errStopReading
			}
			return nil
		}
		out = append(out, decodeFeed(t, sf))
		if stop(out) {
			return errStopReading
		}
		return nil
	}, header...)
	if err != nil {
		t.Fatalf("GET %s: %v after %v", path, err, out)
	}
	if st.Status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, st.Status, st.Body)
	}
	if ctx.Err() != nil {
		t.Fatalf("GET %s: deadline passed after %v", path, out)
	}
	return c, out
}

// completed says whether entries hold the complete event of every one of ids.
func completed(ids ...string) func([]feedEntry) bool {
	return func(es []feedEntry) bool {
		for _, id := range ids {
			if !slices.ContainsFunc(es, func(e feedEntry) bool { return e.WS.WorkflowID == id && e.WS.Event == "complete" }) {
				return false
			}
		}
		return true
	}
}

// checkOrder fails unless offsets strictly increase.
func checkOrder(t testing.TB, es []feedEntry) {
	t.Helper()
	for i := 1; i < len(es); i++ {
		if es[i].Frame.Offset <= es[i-1].Frame.Offset {
			t.Fatalf("offset %d after %d: %v", es[i].Frame.Offset, es[i-1].Frame.Offset, es)
		}
	}
}

// TestTenantFeedSeesItsWorkflowsLive: a live feed sees a workflow of its
// tenant submitted, working and completed, with its query, and nothing of
// another tenant's workflow, which ran just before (its events come first
// in the stream, so the feed had to pass them by).
func TestTenantFeedSeesItsWorkflowsLive(t *testing.T) {
	s := startStack(t, withTokens)
	got := s.liveFeed(t, "/v1/workflows/events", completed("acme-live"), bearer(acmeToken)...)
	g := s.mustSubmit(t, map[string]any{"workflow_id": "globex-live", "query": "globex secret", "plan": plan("a:echo")}, bearer(globexToken)...)
	s.mustFollow(t, g.EventsURL, bearer(globexToken)...)
	s.mustSubmit(t, map[string]any{"workflow_id": "acme-live", "query": "acme live query", "plan": plan("a:echo")}, bearer(acmeToken)...)
	r := <-got
	if t.Failed() {
		return
	}
	if r.c.TenantID != "acme" || r.c.Epoch == "" {
		t.Errorf("connected = %+v, want tenant acme and an epoch", r.c)
	}
	checkOrder(t, r.es)
	var states []string
	for _, e := range r.es {
		if e.Frame.TenantID != "acme" || e.WS.WorkflowID != "acme-live" || e.Frame.WorkflowID != "acme-live" {
			t.Fatalf("acme's feed carried %+v", e.Frame)
		}
		if e.WS.Query != "acme live query" || e.WS.Time.IsZero() || e.WS.CreatedAt == nil {
			t.Errorf("entry %v: query %q time %v created %v, want the query and both times", e, e.WS.Query, e.WS.Time, e.WS.CreatedAt)
		}
		if e.Frame.Offset <= r.c.From {
			t.Errorf("entry %v at or before the live start %d", e, r.c.From)
		}
		states = append(states, string(e.WS.State))
	}
	for _, want := range []string{"submitted", "working", "completed"} {
		if !slices.Contains(states, want) {
			t.Errorf("states %v lack %s", states, want)
		}
	}
	// globex's own feed, replayed, has its workflow and not acme's.
	_, ges := s.readFeed(t, "/v1/workflows/events?from=0", completed("globex-live"), bearer(globexToken)...)
	for _, e := range ges {
		if e.WS.WorkflowID != "globex-live" || e.Frame.TenantID != "globex" {
			t.Fatalf("globex's feed carried %+v", e.Frame)
		}
	}
}

// feedResult is what a feed read in the background yielded.
type feedResult struct {
	c  gateway.FeedConnected
	es []feedEntry
}

// liveFeed reads the feed at path in the background (see readFeed) and
// returns once it is connected; the result comes on the channel.
func (s *stack) liveFeed(t *testing.T, path string, stop func([]feedEntry) bool, header ...string) <-chan feedResult {
	t.Helper()
	started := make(chan struct{})
	got := make(chan feedResult, 1)
	go func() {
		var r feedResult
		defer func() { got <- r }() // also when readFeed fails the test
		once := false
		r.c, r.es = s.readFeed(t, path, func(es []feedEntry) bool {
			if !once {
				once = true
				close(started)
			}
			return stop(es)
		}, header...)
	}()
	select {
	case <-started: // connected: the feed is live from here
	case r := <-got:
		got <- r
		t.Fatal("the feed ended before it connected")
	}
	return got
}

// TestTenantFeedResumesLiveAfterADisconnect: a live feed dropped after the
// first entry of a running workflow and resumed from its Last-Event-ID
// sees the rest of it, live, with no gap and no duplicate.
func TestTenantFeedResumesLiveAfterADisconnect(t *testing.T) {
	s := startStack(t)
	got := s.liveFeed(t, "/v1/workflows/events", func(es []feedEntry) bool { return len(es) == 1 })
	s.mustSubmit(t, map[string]any{"workflow_id": "dropped", "plan": plan("a:echo", "b:echo:a", "c:echo:b", "d:echo:c")})
	head := <-got
	if len(head.es) != 1 {
		t.Fatalf("live feed read %v, want one entry", head.es)
	}
	_, tail := s.readFeed(t, "/v1/workflows/events", completed("dropped"), "Last-Event-ID", head.es[0].ID)
	_, all := s.readFeed(t, "/v1/workflows/events?from=0", completed("dropped"))
	if got, want := fmt.Sprint(append(head.es, tail...)), fmt.Sprint(all); got != want {
		t.Fatalf("live head + resumed tail = %s, want %s", got, want)
	}
}

// feedWorkflows runs n echo workflows of the default tenant to the end.
func feedWorkflows(t *testing.T, s *stack, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("feed-%d", i)
		sub := s.mustSubmit(t, map[string]any{"workflow_id": id, "query": "q " + id, "plan": plan("a:echo", "b:echo:a")})
		s.mustFollow(t, sub.EventsURL)
		ids = append(ids, id)
	}
	return ids
}

// TestTenantFeedResumesWithoutGapOrDuplicate: a feed cut after k entries
// and resumed from its last id (Last-Event-ID over a stale ?from=0, as an
// EventSource reconnects) gives exactly the rest, on SSE and WebSocket.
func TestTenantFeedResumesWithoutGapOrDuplicate(t *testing.T) {
	s := startStack(t)
	ids := feedWorkflows(t, s, 3)
	_, all := s.readFeed(t, "/v1/workflows/events?from=0", completed(ids...))
	checkOrder(t, all)
	for _, e := range all {
		if e.WS.Event == "status" && e.WS.Message == "" && e.WS.State == "" {
			t.Errorf("entry %v has no state", e)
		}
	}
	if len(all) < 6 {
		t.Fatalf("only %d entries for 3 workflows: %v", len(all), all)
	}
	for _, k := range []int{1, len(all) / 2, len(all) - 1} {
		_, head := s.readFeed(t, "/v1/workflows/events?from=0", func(es []feedEntry) bool { return len(es) == k })
		last := head[len(head)-1].ID
		_, tail := s.readFeed(t, "/v1/workflows/events?from=0", func(es []feedEntry) bool { return len(es) == len(all)-k },
			"Last-Event-ID", last)
		if got, want := fmt.Sprint(append(head, tail...)), fmt.Sprint(all); got != want {
			t.Fatalf("cut after %d (id %s): head+tail = %s, want %s", k, last, got, want)
		}
	}

	// The same on the WebSocket, resumed with from and epoch.
	k := len(all) / 2
	c, first := s.readFeedWS(t, "/v1/ws?from=0", k)
	_, rest := s.readFeedWS(t, fmt.Sprintf("/v1/ws?from=%d&epoch=%s", first[k].Offset, c.Epoch), len(all)-k)
	for i, f := range append(first[1:], rest[1:]...) {
		if f.Offset != all[i].Frame.Offset || f.Type != gateway.FrameWorkflowStatus {
			t.Fatalf("ws frame %d = %d %s, want %v", i, f.Offset, f.Type, all[i])
		}
	}

	// A cursor from another epoch is void: a reset frame, then live.
	_, void := s.readFeedWS(t, "/v1/ws?from=3&epoch=not-this-one", 0)
	if len(void) < 2 || void[1].Type != gateway.FrameReset {
		t.Fatalf("void cursor: frames %v, want connected then reset", void)
	}
	var reset map[string]any
	if err := json.Unmarshal(void[1].Data, &reset); err != nil || reset["reason"] != gateway.ResetEpoch {
		t.Errorf("reset data %s (%v), want reason %q", void[1].Data, err, gateway.ResetEpoch)
	}
}

// readFeedWS opens the tenant feed's WebSocket and reads the opening
// frames plus n workflow_status frames; it returns connected's data and
// every frame, connected first (then reset, if any).
func (s *stack) readFeedWS(t testing.TB, path string, n int, header ...string) (gateway.FeedConnected, []wsFrame) {
	t.Helper()
	conn := s.mustDialWS(t, path, header...)
	defer conn.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var c gateway.FeedConnected
	events := 0
	st, err := readWS(ctx, conn, func(f wsFrame) error {
		switch f.Type {
		case gateway.FrameConnected:
			if err := json.Unmarshal(f.Data, &c); err != nil {
				return err
			}
		case gateway.FrameWorkflowStatus:
			events++
		}
		if f.Type != gateway.FrameConnected && f.Type != gateway.FrameReset && events == 0 {
			return fmt.Errorf("unexpected frame %s", f.Type)
		}
		if events == n && f.Type != gateway.FrameConnected && (n > 0 || f.Type == gateway.FrameReset) {
			return errStopReading
		}
		return nil
	})
	if err != nil || ctx.Err() != nil || (st.End != nil && events < n) {
		t.Fatalf("%s: %v (end %v) after %s", path, err, st.End, wsSummary(st.Frames))
	}
	return c, st.Frames
}

// TestTenantFeedStatusFilter keeps only the states asked for.
func TestTenantFeedStatusFilter(t *testing.T) {
	s := startStack(t)
	ids := feedWorkflows(t, s, 2)
	c, es := s.readFeed(t, "/v1/workflows/events?from=0&status=completed", completed(ids...))
	if !slices.Equal(c.Status, []string{"completed"}) {
		t.Errorf("connected status = %v", c.Status)
	}
	for _, e := range es {
		if e.WS.State != "completed" {
			t.Errorf("entry %v passed the completed filter", e)
		}
	}
}

// TestTenantFeedBadParameters: a bad cursor or filter is a 400 naming it,
// on SSE and before the WebSocket upgrade.
func TestTenantFeedBadParameters(t *testing.T) {
	s := startStack(t, withTokens)
	for _, tc := range []struct {
		name, path string
		header     []string
		in, param  string
	}{
		{"sse from", "/v1/workflows/events?from=abc", nil, gateway.InQuery, "from"},
		{"sse negative from", "/v1/workflows/events?from=-1", nil, gateway.InQuery, "from"},
		{"sse Last-Event-ID", "/v1/workflows/events", []string{"Last-Event-ID", "x1"}, gateway.InHeader, "Last-Event-ID"},
		{"sse status", "/v1/workflows/events?status=done", nil, gateway.InQuery, "status"},
		{"sse epoch", "/v1/workflows/events?epoch=" + strings.Repeat("e", 300), nil, gateway.InQuery, "epoch"},
		{"ws from", "/v1/ws?from=abc", wsHandshake, gateway.InQuery, "from"},
		{"ws status", "/v1/ws?status=working,nope", wsHandshake, gateway.InQuery, "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodGet, tc.path, nil, append(bearer(acmeToken), tc.header...)...)
			var e apiErr
			if err := json.Unmarshal(r.Body, &e); err != nil || r.Status != http.StatusBadRequest {
				t.Fatalf("status %d body %s (%v), want 400 in the error shape", r.Status, r.Body, err)
			}
			if e.Error.Code != "invalid_request" || len(e.Error.Problems) != 1 ||
				e.Error.Problems[0].In != tc.in || e.Error.Problems[0].Name != tc.param {
				t.Errorf("error %+v, want one problem in %s %s", e.Error, tc.in, tc.param)
			}
		})
	}
	// Without a token, the feed is refused like every tenant route.
	if r := s.mustDo(t, http.MethodGet, "/v1/workflows/events", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", r.Status)
	}
}

// TestTenantFeedResetsAnExpiredCursor: a cursor older than the oldest
// retained event (events before it deleted, as retention would) gets a
// `reset` frame whose id is the resume point, then the feed goes on live
// from there.
func TestTenantFeedResetsAnExpiredCursor(t *testing.T) {
	s := startStack(t)
	feedWorkflows(t, s, 1)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	str, err := s.env.Bus.JetStream().Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		if err := str.DeleteMsg(ctx, seq); err != nil {
			t.Fatalf("delete %d: %v", seq, err)
		}
	}
	var frames []sseFrame
	st, err := s.readSSE(ctx, "/v1/workflows/events?from=1", func(sf sseFrame, _ []string) error {
		if sf.Event != "" {
			frames = append(frames, sf)
		}
		if len(frames) == 2 {
			return errStopReading
		}
		return nil
	})
	if err != nil || st.Status != http.StatusOK || len(frames) != 2 {
		t.Fatalf("status %d, frames %v, %v", st.Status, frames, err)
	}
	var c gateway.FeedConnected
	if err := json.Unmarshal([]byte(frames[0].Data), &c); err != nil {
		t.Fatal(err)
	}
	var f wsFrame
	var reset map[string]any
	if err := json.Unmarshal([]byte(frames[1].Data), &f); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(f.Data, &reset); err != nil {
		t.Fatal(err)
	}
	if frames[1].Event != gateway.FrameReset || reset["reason"] != gateway.ResetRetention ||
		frames[1].ID != strconv.FormatUint(c.LastOffset, 10) || reset["resume_from"] != float64(c.LastOffset) {
		t.Errorf("second frame %+v (data %v), want a retention reset with id and resume_from %d", frames[1], reset, c.LastOffset)
	}
	// Resuming from the reset's id is not void, and sees what follows.
	got := s.liveFeed(t, "/v1/workflows/events", completed("after-reset"), "Last-Event-ID", frames[1].ID)
	s.mustSubmit(t, map[string]any{"workflow_id": "after-reset", "plan": plan("a:echo")})
	if r := <-got; len(r.es) == 0 || r.es[0].WS.WorkflowID != "after-reset" {
		t.Errorf("after the reset the feed read %v", r.es)
	}
}

// TestTenantFeedIsReadOnly: a viewer token may follow the feed; a control
// frame on its WebSocket is refused with a control_result, and the
// connection goes on.
func TestTenantFeedIsReadOnly(t *testing.T) {
	s := startStack(t, withTokens)
	_, _ = s.readFeed(t, "/v1/workflows/events", func([]feedEntry) bool { return true }, bearer(viewerToken)...)
	conn := s.mustDialWS(t, "/v1/ws", bearer(acmeToken)...)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"cancel","reason":"all of them"}`)); err != nil {
		t.Fatal(err)
	}
	st, err := readWS(ctx, conn, func(f wsFrame) error {
		if f.Type == wsproto.FrameControlResult {
			return errStopReading
		}
		return nil
	})
	if err != nil || len(st.Frames) != 2 || st.Frames[0].Type != gateway.FrameConnected {
		t.Fatalf("frames %s, end %v, err %v: want connected then control_result", wsSummary(st.Frames), st.End, err)
	}
	var res wsproto.ControlResult
	if err := json.Unmarshal(st.Frames[1].Data, &res); err != nil || res.Error != "forbidden" || res.Applied {
		t.Errorf("control_result %s (%v), want forbidden, not applied", st.Frames[1].Data, err)
	}
}

// A workflow may not be called "events": GET /v1/workflows/events is the
// tenant's feed, so its state could never be read.
func TestTenantFeedReservesItsPath(t *testing.T) {
	s := startStack(t)
	resp, err := s.client.Post(s.base+"/v1/workflows", "application/json", strings.NewReader(`{"workflow_id":"events","query":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"pointer": "/workflow_id"`) || !strings.Contains(string(body), "reserved") {
		t.Fatalf("submit workflow_id events: %s %s", resp.Status, body)
	}
}
