package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
)

// The tokens of the user tests: two users of acme, a user-less client
// and a viewer of acme, and an admin of acme.
const (
	adaToken       = "acme-ada-client-0123456789"
	bobToken       = "acme-bob-client-0123456789"
	teamToken      = "acme-team-client-0123456789"
	bobViewerToken = "acme-bob-viewer-0123456789"
	acmeAdminToken = "acme-admin-0123456789abcdef"
)

func withUsers(c *gateway.Config) {
	c.Auth.Tokens = []gateway.Token{
		{Token: adaToken, Tenant: "acme", Role: gateway.RoleClient, User: "ada"},
		{Token: bobToken, Tenant: "acme", Role: gateway.RoleClient, User: "bob"},
		{Token: teamToken, Tenant: "acme", Role: gateway.RoleClient},
		{Token: bobViewerToken, Tenant: "acme", Role: gateway.RoleViewer, User: "bob"},
		{Token: acmeAdminToken, Tenant: "acme", Role: gateway.RoleAdmin},
	}
}

// startUsers starts an auth-on stack with three finished workflows of
// acme, each submitted once the one before had ended (so their events lie
// in this order in the stream): ada's "ada-wf", the tenant-wide "team-wf"
// and bob's "bob-wf".
func startUsers(t *testing.T) *stack {
	t.Helper()
	s := startStack(t, withUsers)
	for _, w := range []struct{ id, token, query string }{
		{"ada-wf", adaToken, "ada's secret facts"},
		{"team-wf", teamToken, "the team's plans"},
		{"bob-wf", bobToken, "bob's own question"},
	} {
		sub := s.mustSubmit(t, map[string]any{"workflow_id": w.id, "query": w.query, "plan": plan("a:echo")}, bearer(w.token)...)
		s.mustFollow(t, sub.EventsURL, bearer(w.token)...)
	}
	return s
}

// a2aCall is one JSON-RPC request on a task: params has {id} where the id
// goes.
type a2aCall struct{ method, params string }

// a2aTaskCalls is every A2A method that names an existing task.
var a2aTaskCalls = []a2aCall{
	{"tasks/get", `{"id": "{id}"}`},
	{"tasks/cancel", `{"id": "{id}"}`},
	{"tasks/resubscribe", `{"id": "{id}"}`},
	{"message/send", `{"message": {"kind": "message", "messageId": "m1", "role": "user", "taskId": "{id}", "parts": [{"kind": "text", "text": "approve"}]}}`},
	{"message/stream", `{"message": {"kind": "message", "messageId": "m1", "role": "user", "taskId": "{id}", "parts": [{"kind": "text", "text": "approve"}]}}`},
}

func (c a2aCall) on(id string) []byte {
	return []byte(`{"jsonrpc": "2.0", "id": 7, "method": "` + c.method + `", "params": ` + strings.ReplaceAll(c.params, "{id}", id) + `}`)
}

// wantHidden checks that, asked with header h, the workflow victim is on
// every surface answered byte for byte (but for the id) as an id that never
// existed — 404 over HTTP, task not found over A2A — and that no answer
// mentions whose it is or what it holds. readOnly asks the reads only (a
// viewer's writes are refused before any id is looked at).
func wantHidden(t *testing.T, s *stack, h []string, victim string, readOnly bool) {
	t.Helper()
	same := func(t *testing.T, what string, got, want reply, status int) {
		t.Helper()
		if got.Status != status || want.Status != status {
			t.Fatalf("%s: status %d (unknown id: %d), want %d: %s", what, got.Status, want.Status, status, got.Body)
		}
		body := bytes.ReplaceAll(got.Body, []byte(victim), []byte("never-was"))
		if !bytes.Equal(body, want.Body) {
			t.Errorf("%s: the hidden workflow answers\n%s\nbut an unknown id\n%s", what, got.Body, want.Body)
		}
		for _, leak := range []string{"secret", "plans", "question", "ada", "user"} {
			if bytes.Contains(body, []byte(leak)) {
				t.Errorf("%s: the answer mentions %q: %s", what, leak, got.Body)
			}
		}
	}
	for _, sf := range workflowSurfaces {
		if readOnly && sf.method != http.MethodGet {
			continue
		}
		t.Run(sf.method+" "+sf.path, func(t *testing.T) {
			m, p, b := sf.on(victim)
			got := s.mustDo(t, m, p, b, sf.headers(h)...)
			m, p, b = sf.on("never-was")
			same(t, m+" "+p, got, s.mustDo(t, m, p, b, sf.headers(h)...), http.StatusNotFound)
		})
	}
	for _, c := range a2aTaskCalls {
		if readOnly && c.method != "tasks/get" && c.method != "tasks/resubscribe" {
			continue
		}
		t.Run("a2a "+c.method, func(t *testing.T) {
			got := s.mustDo(t, http.MethodPost, "/a2a", c.on(victim), h...)
			same(t, c.method, got, s.mustDo(t, http.MethodPost, "/a2a", c.on("never-was"), h...), http.StatusOK)
			if !bytes.Contains(got.Body, []byte("-32001")) {
				t.Errorf("%s: %s, want task not found (-32001)", c.method, got.Body)
			}
		})
	}
}

// TestUserIsolationMatrix: a workflow a request does not see — another
// user's, or a tenant-wide one for a token with a user, or a user's for a
// token without one — is on every surface the 404 of an id that never was.
func TestUserIsolationMatrix(t *testing.T) {
	s := startUsers(t)
	for _, c := range []struct {
		who      string
		h        []string
		victim   string
		readOnly bool
	}{
		{"bob on ada's", bearer(bobToken), "ada-wf", false},
		{"bob naming ada in the header", append(bearer(bobToken), gateway.UserHeader, "ada"), "ada-wf", false},
		{"bob's viewer on ada's", bearer(bobViewerToken), "ada-wf", true},
		{"bob on the tenant-wide one", bearer(bobToken), "team-wf", false},
		{"a user-less token on ada's", bearer(teamToken), "ada-wf", false},
		{"an admin acting for bob on ada's", append(bearer(acmeAdminToken), gateway.UserHeader, "bob"), "ada-wf", false},
		{"ada's cookie on bob's", []string{"Cookie", gateway.TokenCookie + "=" + adaToken}, "bob-wf", false},
	} {
		t.Run(c.who, func(t *testing.T) { wantHidden(t, s, c.h, c.victim, c.readOnly) })
	}
	// Ids are one namespace per tenant: taking ada's is refused, with
	// nothing of hers in the answer.
	r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"workflow_id": "ada-wf", "query": "mine now"}`), bearer(bobToken)...)
	if r.Status != http.StatusConflict || bytes.Contains(r.Body, []byte("secret")) {
		t.Errorf("bob submits with ada's id: %d %s, want a bare 409", r.Status, r.Body)
	}
	// Those who see a workflow still do.
	for _, c := range []struct {
		who string
		h   []string
		ids []string
	}{
		{"ada", bearer(adaToken), []string{"ada-wf"}},
		{"bob's viewer", bearer(bobViewerToken), []string{"bob-wf"}},
		{"the user-less token", bearer(teamToken), []string{"team-wf"}},
		{"the admin", bearer(acmeAdminToken), []string{"ada-wf", "team-wf", "bob-wf"}},
		{"the admin acting for ada", append(bearer(acmeAdminToken), gateway.UserHeader, "ada"), []string{"ada-wf"}},
	} {
		for _, id := range c.ids {
			if st := s.state(t, "/v1/workflows/"+id, c.h...); st["workflow_id"] != id {
				t.Errorf("%s reads %s: %v", c.who, id, st)
			}
			s.mustFollow(t, "/v1/workflows/"+id+"/events", c.h...)
			if r := s.mustDo(t, http.MethodPost, "/a2a", a2aTaskCalls[0].on(id), c.h...); !bytes.Contains(r.Body, []byte(`"result"`)) {
				t.Errorf("%s: tasks/get %s: %s", c.who, id, r.Body)
			}
		}
	}
}

// TestUserForkIsTheParentsUsers: a fork carries its parent's step outputs,
// so it runs for the parent's user whoever asked for it (its owner or an
// admin), and stays hidden from everyone else.
func TestUserForkIsTheParentsUsers(t *testing.T) {
	s := startUsers(t)
	for _, c := range []struct {
		who string
		h   []string
	}{{"ada", bearer(adaToken)}, {"admin", bearer(acmeAdminToken)}} {
		r := s.mustDo(t, http.MethodGet, "/v1/workflows/ada-wf/checkpoints", nil, c.h...)
		var hist struct {
			Revisions []struct {
				Revision uint64 `json:"revision"`
			} `json:"revisions"`
		}
		if err := json.Unmarshal(r.Body, &hist); err != nil || r.Status != http.StatusOK || len(hist.Revisions) == 0 {
			t.Fatalf("%s: checkpoints of ada-wf: %d %s (%v)", c.who, r.Status, r.Body, err)
		}
		// The first revision is the planned workflow: its step runs again.
		id := "fork-by-" + c.who
		body := fmt.Sprintf(`{"revision": %d, "workflow_id": %q}`, hist.Revisions[0].Revision, id)
		if r = s.mustDo(t, http.MethodPost, "/v1/workflows/ada-wf/fork", []byte(body), c.h...); r.Status != http.StatusAccepted {
			t.Fatalf("%s forks ada-wf: %d %s", c.who, r.Status, r.Body)
		}
		s.mustFollow(t, "/v1/workflows/"+id+"/events", c.h...)
		if st := s.state(t, "/v1/workflows/"+id, bearer(adaToken)...); st["user"] != "ada" {
			t.Errorf("%s's fork of ada-wf runs for %v, want ada", c.who, st["user"])
		}
		wantHidden(t, s, bearer(bobToken), id, false)
	}
}

// listed returns the ids GET /v1/workflows lists for header h, and the
// user each entry names.
func listed(t *testing.T, s *stack, h ...string) ([]string, map[string]string) {
	t.Helper()
	r := s.mustDo(t, http.MethodGet, "/v1/workflows", nil, h...)
	var l struct {
		Workflows []struct {
			WorkflowID string `json:"workflow_id"`
			User       string `json:"user"`
		} `json:"workflows"`
	}
	if err := json.Unmarshal(r.Body, &l); err != nil || r.Status != http.StatusOK {
		t.Fatalf("list: %d %s (%v)", r.Status, r.Body, err)
	}
	var out []string
	users := map[string]string{}
	for _, w := range l.Workflows {
		out = append(out, w.WorkflowID)
		users[w.WorkflowID] = w.User
	}
	return out, users
}

// TestUserListsAndFeeds: GET /v1/workflows and the tenant feed (SSE and
// WebSocket) carry exactly the workflows the token sees.
func TestUserListsAndFeeds(t *testing.T) {
	s := startUsers(t)
	everyone := []string{"ada-wf", "bob-wf", "team-wf"} // id order
	sees := []struct {
		who  string
		h    []string
		want []string
	}{
		{"ada", bearer(adaToken), []string{"ada-wf"}},
		{"bob", bearer(bobToken), []string{"bob-wf"}},
		{"bob's viewer", bearer(bobViewerToken), []string{"bob-wf"}},
		{"the user-less token", bearer(teamToken), []string{"team-wf"}},
		{"the admin", bearer(acmeAdminToken), everyone},
		{"the admin acting for ada", append(bearer(acmeAdminToken), gateway.UserHeader, "ada"), []string{"ada-wf"}},
	}
	for _, c := range sees {
		t.Run("list/"+c.who, func(t *testing.T) {
			got, users := listed(t, s, c.h...)
			if !slices.Equal(got, c.want) {
				t.Errorf("list = %v, want %v", got, c.want)
			}
			for id, u := range users {
				if want := map[string]string{"ada-wf": "ada", "bob-wf": "bob"}[id]; u != want {
					t.Errorf("list entry %s names user %q, want %q", id, u, want)
				}
			}
			// Paging counts only what is seen: a page of one, then the rest.
			r := s.mustDo(t, http.MethodGet, "/v1/workflows?limit=1", nil, c.h...)
			if want := len(c.want) > 1; bytes.Contains(r.Body, []byte(`"next"`)) != want {
				t.Errorf("page of one: %s, want a next link: %v", r.Body, want)
			}
		})
	}
	// Replayed from the start up to the complete event of the last
	// workflow it sees, a feed has passed the events of every workflow
	// submitted before (the live feeds below pass later ones).
	for _, c := range sees {
		want := c.want
		if len(want) == len(everyone) {
			want = []string{"ada-wf", "team-wf", "bob-wf"} // the feed's order is the events'
		}
		t.Run("feed/"+c.who, func(t *testing.T) {
			_, es := s.readFeed(t, "/v1/workflows/events?from=0", completed(want[len(want)-1]), c.h...)
			if got := feedIDs(es); !slices.Equal(got, want) {
				t.Errorf("feed carried %v, want %v (%v)", got, want, es)
			}
		})
	}
	t.Run("live feeds", func(t *testing.T) {
		// Each feed ends at its user's last workflow, after the other's.
		adas := s.liveFeed(t, "/v1/workflows/events", completed("ada-live-2"), bearer(adaToken)...)
		bobs := s.liveFeed(t, "/v1/workflows/events", completed("bob-live"), bearer(bobToken)...)
		for _, w := range []struct{ id, token string }{{"ada-live-1", adaToken}, {"bob-live", bobToken}, {"ada-live-2", adaToken}} {
			sub := s.mustSubmit(t, map[string]any{"workflow_id": w.id, "query": "secret of " + w.id, "plan": plan("a:echo")}, bearer(w.token)...)
			s.mustFollow(t, sub.EventsURL, bearer(w.token)...)
		}
		if r := <-bobs; !slices.Equal(feedIDs(r.es), []string{"bob-live"}) {
			t.Errorf("bob's live feed carried %v, want only bob-live", r.es)
		}
		if r := <-adas; !slices.Equal(feedIDs(r.es), []string{"ada-live-1", "ada-live-2"}) {
			t.Errorf("ada's live feed carried %v, want only ada-live-1 and ada-live-2", r.es)
		}
	})
	t.Run("websocket feed/bob", func(t *testing.T) {
		conn := s.mustDialWS(t, "/v1/ws?from=0", bearer(bobToken)...)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		var ids []string
		st, err := readWS(ctx, conn, func(f wsFrame) error {
			if f.Type != gateway.FrameWorkflowStatus {
				return nil
			}
			var ws gateway.WorkflowStatus
			if err := json.Unmarshal(f.Data, &ws); err != nil {
				return err
			}
			if !slices.Contains(ids, ws.WorkflowID) {
				ids = append(ids, ws.WorkflowID)
			}
			if ws.WorkflowID == "bob-live" && ws.Event == "complete" {
				return errStopReading
			}
			return nil
		})
		if err != nil || ctx.Err() != nil {
			t.Fatalf("bob's WebSocket feed: %v (end %v) after %v", err, st.End, ids)
		}
		if want := []string{"bob-wf", "bob-live"}; !slices.Equal(ids, want) {
			t.Errorf("bob's WebSocket feed carried %v, want %v", ids, want)
		}
	})
}

// feedIDs is the workflows a feed's entries name, in order of first
// appearance.
func feedIDs(es []feedEntry) []string {
	var out []string
	for _, e := range es {
		if !slices.Contains(out, e.WS.WorkflowID) {
			out = append(out, e.WS.WorkflowID)
		}
	}
	return out
}

// TestUserHeaderWithAuthOff: with auth off the request is the operator's
// and sees everything, unless X-Agentbus-User names a user: it then acts
// for that user as an admin token would — its submissions (A2A too) run
// for the user and it sees that user's workflows only.
func TestUserHeaderWithAuthOff(t *testing.T) {
	s := startStack(t)
	ada := []string{gateway.UserHeader, "ada"}
	bob := []string{gateway.UserHeader, "bob"}
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "off-ada", "query": "ada's secret facts", "plan": plan("a:echo")}, ada...)
	s.mustFollow(t, sub.EventsURL, ada...)
	if st := s.state(t, sub.StateURL); st["user"] != "ada" {
		t.Fatalf("no header: state %v, want ada's workflow", st)
	}
	wantHidden(t, s, bob, "off-ada", false)
	if got, _ := listed(t, s, bob...); len(got) != 0 {
		t.Errorf("bob lists %v", got)
	}
	if got, users := listed(t, s); !slices.Equal(got, []string{"off-ada"}) || users["off-ada"] != "ada" {
		t.Errorf("no header lists %v %v, want off-ada of ada", got, users)
	}
	r := s.mustDo(t, http.MethodGet, "/v1/workflows", nil, gateway.UserHeader, "Not A User")
	wantError(t, "a bad user header", r, http.StatusBadRequest, "invalid_user")

	// An A2A task made for ada is ada's.
	send := `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hello"}]}}}`
	r = s.mustDo(t, http.MethodPost, "/a2a", []byte(send), ada...)
	var ans struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.Body, &ans); err != nil || ans.Result.ID == "" {
		t.Fatalf("message/send as ada: %d %s (%v)", r.Status, r.Body, err)
	}
	if st := s.state(t, "/v1/workflows/"+ans.Result.ID, ada...); st["user"] != "ada" {
		t.Errorf("A2A task made with X-Agentbus-User ada runs for %v", st["user"])
	}
	wantHidden(t, s, bob, ans.Result.ID, false)
}

// TestUserWhoami: GET /v1/whoami names the user a request acts for, so
// that a page can say why it lists what it lists.
func TestUserWhoami(t *testing.T) {
	s, open := startStack(t, withUsers), startStack(t)
	for _, c := range []struct {
		name   string
		s      *stack
		header []string
		want   string
	}{
		{"ada", s, bearer(adaToken), "ada"},
		{"bob naming ada", s, append(bearer(bobToken), gateway.UserHeader, "ada"), "bob"},
		{"user-less client", s, bearer(teamToken), ""},
		{"admin", s, bearer(acmeAdminToken), ""},
		{"admin acting for ada", s, append(bearer(acmeAdminToken), gateway.UserHeader, "ada"), "ada"},
		{"auth off", open, nil, ""},
		{"auth off, user header", open, []string{gateway.UserHeader, "ada"}, "ada"},
	} {
		r := c.s.mustDo(t, http.MethodGet, "/v1/whoami", nil, c.header...)
		var got gateway.Whoami
		if err := json.Unmarshal(r.Body, &got); err != nil || r.Status != http.StatusOK || got.User != c.want {
			t.Errorf("%s: whoami %d %s, want user %q", c.name, r.Status, r.Body, c.want)
		}
	}
}
