package gateway_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/schemas"
)

// Tokens may name a user; a user that is not a subject token is refused
// at its JSON pointer, in either form of the table.
func TestParseTokensUser(t *testing.T) {
	toks, err := gateway.ParseTokens([]byte(`[{"token":"aaaaaaaaaaaaaaaa-ada","tenant":"acme","role":"client","user":"ada"},
		{"token":"aaaaaaaaaaaaaaaa-all","tenant":"acme","role":"client"}]`))
	if err != nil || len(toks) != 2 || toks[0].User != "ada" || toks[1].User != "" {
		t.Fatalf("tokens %v, %v", toks, err)
	}
	if s := toks[0].String(); s != "token(tenant=acme role=client user=ada)" {
		t.Fatalf("String() = %q", s)
	}
	toks, err = gateway.ParseTokens([]byte(`{"bbbbbbbbbbbbbbbb-bob":{"tenant":"acme","role":"viewer","user":"bob"}}`))
	if err != nil || len(toks) != 1 || toks[0].User != "bob" {
		t.Fatalf("object form: %v, %v", toks, err)
	}
	_, err = gateway.ParseTokens([]byte(`[{"token":"aaaaaaaaaaaaaaaa-ada","tenant":"acme","role":"client","user":"Ada Lovelace"}]`))
	var ve *schemas.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Pointer != "/0/user" {
		t.Fatalf("bad user: %v", err)
	}
	cfg := gateway.AuthConfig{Tokens: []gateway.Token{{Token: "cccccccccccccccc", Tenant: "acme", Role: gateway.RoleClient, User: "x.y"}}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "user id") {
		t.Fatalf("Validate: %v", err)
	}
}

// A bad session_id is a 400 at /session_id; an unknown session is a 404
// that says so; a session is read back by its user only.
func TestSessionsAPI(t *testing.T) {
	s := startStack(t, func(c *gateway.Config) {
		c.Auth.Tokens = []gateway.Token{
			{Token: "acme-ada-0123456789", Tenant: "acme", Role: gateway.RoleClient, User: "ada"},
			{Token: "acme-bob-0123456789", Tenant: "acme", Role: gateway.RoleClient, User: "bob"},
			{Token: "acme-admin-0123456789", Tenant: "acme", Role: gateway.RoleAdmin},
		}
	})
	ada := []string{"Authorization", "Bearer acme-ada-0123456789"}
	bob := []string{"Authorization", "Bearer acme-bob-0123456789"}
	admin := []string{"Authorization", "Bearer acme-admin-0123456789"}

	r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"hi","session_id":"Not A Token"}`), ada...)
	var e apiErr
	if err := json.Unmarshal(r.Body, &e); err != nil || r.Status != http.StatusBadRequest || len(e.Error.Problems) != 1 || e.Error.Problems[0].Pointer != "/session_id" {
		t.Fatalf("bad session_id: %d %s", r.Status, r.Body)
	}

	r = s.mustDo(t, http.MethodGet, "/v1/sessions/nope", nil, ada...)
	if err := json.Unmarshal(r.Body, &e); err != nil || r.Status != http.StatusNotFound || !strings.Contains(e.Error.Message, `no session "nope" of user "ada" in tenant "acme"`) {
		t.Fatalf("unknown session: %d %s", r.Status, r.Body)
	}
	if r = s.mustDo(t, http.MethodGet, "/v1/sessions/Bad.Id", nil, ada...); r.Status != http.StatusNotFound {
		t.Fatalf("bad id: %d %s", r.Status, r.Body)
	}

	sub := s.mustSubmit(t, map[string]any{"query": "hello there", "session_id": "chat-1"}, ada...)
	s.mustFollow(t, sub.EventsURL, ada...)
	r = s.mustDo(t, http.MethodGet, "/v1/sessions/chat-1", nil, ada...)
	var got gateway.SessionResponse
	if err := json.Unmarshal(r.Body, &got); err != nil || r.Status != http.StatusOK || got.TurnCount != 1 || len(got.Turns) != 1 ||
		got.Turns[0].WorkflowID != sub.WorkflowID || got.Turns[0].Query != "hello there" || got.User != "ada" {
		t.Fatalf("ada's session: %d %s", r.Status, r.Body)
	}
	// Bob cannot read it, nor name ada; an admin can.
	if r = s.mustDo(t, http.MethodGet, "/v1/sessions/chat-1", nil, bob...); r.Status != http.StatusNotFound {
		t.Fatalf("bob reads ada's session: %d %s", r.Status, r.Body)
	}
	if r = s.mustDo(t, http.MethodGet, "/v1/sessions/chat-1?user=ada", nil, bob...); r.Status != http.StatusForbidden {
		t.Fatalf("bob names ada: %d %s", r.Status, r.Body)
	}
	if r = s.mustDo(t, http.MethodGet, "/v1/sessions/chat-1?user=ada", nil, admin...); r.Status != http.StatusOK {
		t.Fatalf("admin reads ada's: %d %s", r.Status, r.Body)
	}
	if r = s.mustDo(t, http.MethodGet, "/v1/sessions/chat-1", nil, admin...); r.Status != http.StatusNotFound {
		t.Fatalf("admin without a user reads a user's session: %d %s", r.Status, r.Body)
	}
	// The list: ada's has chat-1, bob's is empty.
	var list gateway.SessionsResponse
	r = s.mustDo(t, http.MethodGet, "/v1/sessions", nil, ada...)
	if err := json.Unmarshal(r.Body, &list); err != nil || r.Status != http.StatusOK || len(list.Sessions) != 1 ||
		list.Sessions[0].SessionID != "chat-1" || list.Sessions[0].TurnCount != 1 || list.Sessions[0].LastQuery != "hello there" {
		t.Fatalf("ada's sessions: %d %s", r.Status, r.Body)
	}
	r = s.mustDo(t, http.MethodGet, "/v1/sessions", nil, bob...)
	if err := json.Unmarshal(r.Body, &list); err != nil || r.Status != http.StatusOK || len(list.Sessions) != 0 || list.User != "bob" {
		t.Fatalf("bob's sessions: %d %s", r.Status, r.Body)
	}
}

// An A2A contextId that is a token is the session: its tasks are turns.
func TestA2AContextIsTheSession(t *testing.T) {
	s, c := startA2A(t)
	for _, q := range []string{"how does sync.RWMutex work", "and what about its read lock?"} {
		p := textMessage(q)
		p.Message.ContextID = "a2a-chat-1"
		if _, err := c.SendMessage(ctxT(t), p); err != nil {
			t.Fatal(err)
		}
	}
	var got gateway.SessionResponse
	r := s.mustDo(t, http.MethodGet, "/v1/sessions/a2a-chat-1", nil)
	if err := json.Unmarshal(r.Body, &got); err != nil || r.Status != http.StatusOK || got.TurnCount != 2 ||
		got.Turns[1].ResolvedQuery != "sync.RWMutex read lock" {
		t.Fatalf("session of the context: %d %s", r.Status, r.Body)
	}
}

// The legacy POST /tasks/send's sessionId is the session when it is a
// token; one that is not stays a label, as before, and starts none.
func TestTasksSendSessionID(t *testing.T) {
	s := startStack(t)
	for i, q := range []string{"how does sync.RWMutex work", "and what about its read lock?"} {
		body := `{"id":"legacy-s-` + string(rune('a'+i)) + `","sessionId":"legacy-chat","message":{"role":"user","parts":[{"type":"text","text":"` + q + `"}]}}`
		if r := s.mustDo(t, http.MethodPost, "/tasks/send", []byte(body)); r.Status != http.StatusOK {
			t.Fatalf("tasks/send %q: %d %s", q, r.Status, r.Body)
		}
	}
	var got gateway.SessionResponse
	r := s.mustDo(t, http.MethodGet, "/v1/sessions/legacy-chat", nil)
	if err := json.Unmarshal(r.Body, &got); err != nil || r.Status != http.StatusOK || got.TurnCount != 2 || got.Turns[1].ResolvedQuery != "sync.RWMutex read lock" {
		t.Fatalf("session legacy-chat: %d %s", r.Status, r.Body)
	}
	body := `{"id":"legacy-s-z","sessionId":"Not A Token","message":{"role":"user","parts":[{"type":"text","text":"hi"}]}}`
	r = s.mustDo(t, http.MethodPost, "/tasks/send", []byte(body))
	var task struct {
		ContextID string `json:"contextId"`
	}
	if err := json.Unmarshal(r.Body, &task); err != nil || r.Status != http.StatusOK || task.ContextID != "Not A Token" {
		t.Fatalf("tasks/send with a label: %d %s", r.Status, r.Body)
	}
}
