package a2aagent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentbus/agentbus/agents/a2aagent"
)

func TestParseEndpoint(t *testing.T) {
	ok := []struct {
		in   string
		want a2aagent.Endpoint
	}{
		{"https://agents.example.com/research", a2aagent.Endpoint{URL: "https://agents.example.com/research"}},
		{" http://127.0.0.1:9000 ;prefix=ext_", a2aagent.Endpoint{URL: "http://127.0.0.1:9000", Prefix: "ext_"}},
		{"https://h/a;header=authorization:env:AGENT_TOKEN;header=X-Api-Key:env:KEY",
			a2aagent.Endpoint{URL: "https://h/a", HeadersEnv: map[string]string{"Authorization": "AGENT_TOKEN", "X-Api-Key": "KEY"}}},
		{"https://h/.well-known/agent-card.json", a2aagent.Endpoint{URL: "https://h/.well-known/agent-card.json"}},
	}
	for _, c := range ok {
		t.Run(c.in, func(t *testing.T) {
			got, err := a2aagent.ParseEndpoint(c.in)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ParseEndpoint(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			}
		})
	}
	bad := []struct{ in, says string }{
		{"", "no URL"},
		{"agents.example.com", "want an http:// or https:// URL"},
		{"ftp://agents.example.com", "want an http:// or https:// URL"},
		{"https://", "no host"},
		{"https://user:pw@h/a", "credentials in the URL"},
		{"https://h/a?x=1", "query or fragment"},
		{"https://h/a;prefix=Ext.", `prefix "Ext."`},
		{"https://h/a;prefix=a;prefix=b", "prefix given twice"},
		{"https://h/a;header=Authorization:Bearer xyz", "values come only from the environment"},
		{"https://h/a;header=Authorization", "want header=NAME:env:VARIABLE"},
		{"https://h/a;header=Bad Name:env:X", "not an HTTP token"},
		{"https://h/a;header=Host:env:X", "set by the client itself"},
		{"https://h/a;header=X-Key:env:1BAD", "not an environment variable name"},
		{"https://h/a;header=X-Key:env:A;header=x-key:env:B", "given twice"},
		{"https://h/a;timeout=3s", `unknown option "timeout=3s"`},
	}
	for _, c := range bad {
		t.Run(c.in, func(t *testing.T) {
			_, err := a2aagent.ParseEndpoint(c.in)
			if !errors.Is(err, a2aagent.ErrInvalidEndpoint) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("ParseEndpoint(%q) error %v; want ErrInvalidEndpoint saying %q", c.in, err, c.says)
			}
		})
	}
}

func TestLoadEndpoints(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[{"url": "https://a/x", "prefix": "ext_", "headers_env": {"authorization": "TOKEN"}}, {"url": "http://b"}]`)
	list, err := a2aagent.LoadEndpoints(good)
	want := []a2aagent.Endpoint{{URL: "https://a/x", Prefix: "ext_", HeadersEnv: map[string]string{"Authorization": "TOKEN"}}, {URL: "http://b", HeadersEnv: map[string]string{}}}
	if err != nil || !reflect.DeepEqual(list, want) {
		t.Fatalf("LoadEndpoints = %+v, %v; want %+v", list, err, want)
	}
	for name, c := range map[string]struct{ body, says string }{
		"unknown field": {`[{"url": "https://a", "header": {}}]`, `unknown field "header"`},
		"not a list":    {`{"url": "https://a"}`, "want a JSON list"},
		"bad entry":     {`[{"url": "https://a"}, {"url": "mailto:x"}]`, "entry 2"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := a2aagent.LoadEndpoints(write(strings.ReplaceAll(name, " ", "_")+".json", c.body))
			if !errors.Is(err, a2aagent.ErrInvalidEndpoint) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v; want ErrInvalidEndpoint saying %q", err, c.says)
			}
		})
	}
	if _, err := a2aagent.LoadEndpoints(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("a missing file loaded")
	}
}

func TestCapability(t *testing.T) {
	for _, c := range []struct{ prefix, id, want string }{
		{"", "summarize", "summarize"},
		{"ext_", "text.shout", "ext_text_shout"},
		{"", "Web Search", "web_search"},
		{"", "a..b**c", "a_b_c"},
		{"", "_hidden", "hidden"},
		{"", "über-tool", "ber-tool"},
		{"", strings.Repeat("x", 80), strings.Repeat("x", 63)},
	} {
		got, err := a2aagent.Capability(c.prefix, c.id)
		if err != nil || got != c.want {
			t.Errorf("Capability(%q, %q) = %q, %v; want %q", c.prefix, c.id, got, err, c.want)
		}
	}
	for _, id := range []string{"", "...", "__"} {
		if got, err := a2aagent.Capability("", id); err == nil {
			t.Errorf("Capability(%q) = %q; want an error", id, got)
		}
	}
}

// TestNewRefuses: an agent that cannot be served is refused at start,
// saying why.
func TestNewRefuses(t *testing.T) {
	env := func(k string) string { return map[string]string{"TOKEN": token}[k] }
	connect := func(a *testAgent, opts string, getenv func(string) string) error {
		ep, err := a2aagent.ParseEndpoint(a.srv.URL + opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		r, err := a2aagent.New(ctx, a2aagent.Config{Endpoint: ep, Getenv: getenv, CardTimeout: 5 * time.Second})
		if err == nil {
			r.Close()
		}
		return err
	}
	a := startAgent(t, false)
	if err := connect(a, ";header=Authorization:env:TOKEN", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "environment variable TOKEN is not set") {
		t.Fatalf("missing variable: %v", err)
	}
	if err := connect(a, "", env); !errors.Is(err, a2aagent.ErrUnavailable) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("no token: %v; want ErrUnavailable with the 401", err)
	}
	twins := startAgent(t, false, a2a.AgentSkill{ID: "a.b"}, a2a.AgentSkill{ID: "a_b"})
	if err := connect(twins, ";header=Authorization:env:TOKEN", env); !errors.Is(err, a2aagent.ErrCollision) || !strings.Contains(err.Error(), `skills "a.b" and "a_b" both make capability "a_b"`) {
		t.Fatalf("twin skills: %v", err)
	}
	none := startAgent(t, false, []a2a.AgentSkill{}...)
	if err := connect(none, ";header=Authorization:env:TOKEN", env); err == nil || !strings.Contains(err.Error(), "lists no skill") {
		t.Fatalf("no skills: %v", err)
	}
}
