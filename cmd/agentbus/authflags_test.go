package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testToken = "cli-client-0123456789abcdef"

// TestTokensFlagRejectsBadTables: a bad table stops serve and gateway
// before anything starts, names the file and the JSON pointer, and never
// shows a token, even when the table came inline through AGENTBUS_TOKENS.
func TestTokensFlagRejectsBadTables(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(bad, []byte(`[{"token": "`+testToken+`", "tenant": "acme", "role": "root"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		env  string
		says []string
	}{
		{"file", []string{"serve", "--data", dir, "--tokens", bad}, "", []string{"--tokens " + bad, "/0/role"}},
		{"missing file", []string{"gateway", "--tokens", filepath.Join(dir, "nope.json")}, "", []string{"nope.json", "no such file"}},
		{"inline env", []string{"gateway"}, `{"` + testToken + `": {"tenant": "Not Valid", "role": "client"}}`, []string{"inline JSON", "/cli-…/tenant"}},
		{"env naming a file", []string{"serve", "--data", dir}, bad, []string{"/0/role"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("AGENTBUS_TOKENS", c.env)
			}
			code, _, stderr := cli(t, c.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, stderr)
			}
			for _, s := range c.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q lacks %q", stderr, s)
				}
			}
			if strings.Contains(stderr, "0123456789") {
				t.Errorf("stderr shows the token: %s", stderr)
			}
		})
	}
}

// TestServeWithTokens: with an inline table, serve turns auth on, and the
// CLI's --token (which always also sends X-Agentbus-Tenant) works.
func TestServeWithTokens(t *testing.T) {
	f := serveFlags{data: t.TempDir(), natsAddr: "127.0.0.1:-1", httpAddr: "127.0.0.1:0", logLevel: "error", eventsMaxAge: time.Hour}
	if err := f.auth.tokens.Set(` [{"token": "` + testToken + `", "tenant": "acme", "role": "client"}]`); err != nil || f.auth.check() != nil {
		t.Fatalf("Set: %v, check: %v", err, f.auth.check())
	}
	if s := f.auth.tokens.String(); strings.Contains(s, testToken) {
		t.Errorf("the flag prints as %q", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	readyc, errc := make(chan readyInfo, 1), make(chan error, 1)
	go func() { errc <- serve(ctx, f, func(i readyInfo) { readyc <- i }) }()
	t.Cleanup(func() { cancel(); <-errc })
	var info readyInfo
	select {
	case info = <-readyc:
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("serve not ready within 20s")
	}
	resp, err := http.Get(info.HTTPURL + "/v1/workflows")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /v1/workflows without a token: %d, want 401", resp.StatusCode)
	}
	if code, _, stderr := cli(t, "ask", "--url", info.HTTPURL, "hi"); code != exitUsage || !strings.Contains(stderr, "no credentials") {
		t.Errorf("ask without --token: exit %d %s", code, stderr)
	}
	code, out, stderr := cli(t, "ask", "--url", info.HTTPURL, "--token", testToken, "--json", "hello tenant")
	if code != exitCompleted || !strings.Contains(out, `"tenant_id":"acme"`) {
		t.Fatalf("ask --token: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
}
