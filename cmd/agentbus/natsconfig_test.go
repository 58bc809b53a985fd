package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/internal/natsauth"
)

const (
	natsCfgAcmeToken = "acme-token-0123456789abcdef"
	natsCfgBetaToken = "beta-token-0123456789abcdef"
)

// natsConfigTokens writes a token table of tenants acme (a client and a
// viewer) and beta (an admin).
func natsConfigTokens(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "tokens.json")
	table := `[{"token": "` + natsCfgAcmeToken + `", "tenant": "acme", "role": "client"},
	           {"token": "` + natsCfgAcmeToken + `-viewer", "tenant": "acme", "role": "viewer"},
	           {"token": "` + natsCfgBetaToken + `", "tenant": "beta", "role": "admin"}]`
	if err := os.WriteFile(path, []byte(table), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNatsConfigRendersAWorkingConfiguration: the command's output, given
// to a real nats-server, lets agentbus's roles provision and acme's client
// submit, and refuses acme's client anything of beta's; the credentials
// file keeps every password across runs; neither output shows a token or
// (the configuration) a password.
func TestNatsConfigRendersAWorkingConfiguration(t *testing.T) {
	dir := t.TempDir()
	tokens := natsConfigTokens(t, dir)
	creds, out := filepath.Join(dir, "nats-credentials.json"), filepath.Join(dir, "nats-accounts.conf")
	code, stdout, stderr := cli(t, "nats-config", "--tokens", tokens, "--credentials", creds, "--out", out,
		"--worker-capability", "acme=translate,ocr", "--bcrypt-cost", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("with --out, stdout is %q", stdout)
	}
	for _, want := range []string{"2 tenant(s) (acme, beta)", "acme.client", "beta.worker", "agentbus-gateway", "new passwords for", "beta.worker pulls no steps", creds} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	conf, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := natsauth.LoadCredentials(creds)
	if err != nil {
		t.Fatal(err)
	}
	if len(pw) != 8 {
		t.Errorf("credentials for %d users, want 8 (2 per tenant, 3 roles, sys): %v", len(pw), keys(pw))
	}
	for _, f := range []string{out, creds} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", f, fi.Mode().Perm(), err)
		}
	}
	for _, secret := range append([]string{natsCfgAcmeToken, natsCfgBetaToken}, values(pw)...) {
		if strings.Contains(string(conf), secret) || strings.Contains(stderr, secret) {
			t.Fatalf("a token or password is in the configuration or on stderr")
		}
	}
	for _, want := range []string{`"acme-STEP-translate"`, `"acme-STEP-ocr"`, `"TENANT_beta"`} {
		if !strings.Contains(string(conf), want[1:len(want)-1]) {
			t.Errorf("configuration lacks %s", want)
		}
	}

	// A second run, to stdout: same users, same passwords.
	code, stdout, stderr = cli(t, "nats-config", "--tokens", tokens, "--credentials", creds, "--bcrypt-cost", "4")
	if code != 0 || !strings.Contains(stdout, "accounts {") || strings.Contains(stderr, "new passwords") {
		t.Fatalf("second run: exit %d, stderr %s", code, stderr)
	}
	again, err := natsauth.LoadCredentials(creds)
	if err != nil || again[natsauth.ClientUser("acme")] != pw[natsauth.ClientUser("acme")] {
		t.Errorf("the second run changed acme.client's password (%v)", err)
	}

	srv, err := broker.Start(broker.Config{DataDir: filepath.Join(dir, "data"), Addr: "127.0.0.1:-1", ConfigFile: out})
	if err != nil {
		t.Fatalf("nats-server refused the rendered configuration: %v", err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sys, err := bus.Connect(ctx, bus.Config{URL: srv.ClientURL(), Options: []nats.Option{nats.UserInfo(natsauth.UserOrchestrator, pw[natsauth.UserOrchestrator])}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Close)
	if err := sys.Provision(ctx, bus.StreamsConfig{}); err != nil {
		t.Fatalf("agentbus-orchestrator provisions: %v", err)
	}
	if _, err := bus.Connect(ctx, bus.Config{URL: srv.ClientURL(), Options: []nats.Option{nats.UserInfo(natsauth.ClientUser("acme"), natsCfgAcmeToken)}}); !errors.Is(err, bus.ErrAuthorization) {
		t.Errorf("acme.client with the gateway token as password: %v, want refused", err)
	}

	violations := make(chan error, 8)
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(natsauth.ClientUser("acme"), pw[natsauth.ClientUser("acme")]),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.NewWithAPIPrefix(nc, natsauth.APIPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if ack, err := js.Publish(ctx, "agentbus.acme.workflow.submit", []byte(`{"query":"hello"}`)); err != nil || ack.Stream != "AGENTBUS_WORKFLOWS" {
		t.Errorf("acme.client submits: %+v %v", ack, err)
	}
	if err := nc.Publish("agentbus.beta.workflow.submit", []byte(`{"query":"forged"}`)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "agentbus.beta.workflow.submit") {
			t.Errorf("acme.client submitting for beta: %v", err)
		}
	case <-ctx.Done():
		t.Error("acme.client submitted for beta and the server said nothing")
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestNatsConfigRejectsBadInput: every bad input ends with status 3 and a
// message naming the flag (and the file), never a token.
func TestNatsConfigRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	tokens := natsConfigTokens(t, dir)
	creds := filepath.Join(dir, "creds.json")
	badTenant := filepath.Join(dir, "bad-tenant.json")
	if err := os.WriteFile(badTenant, []byte(`{"`+natsCfgAcmeToken+`": {"tenant": "Acme.Corp", "role": "client"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	badCreds := filepath.Join(dir, "bad-creds.json")
	if err := os.WriteFile(badCreds, []byte(`["not", "an", "object"]`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		says []string
	}{
		{"no tokens", []string{"--credentials", creds}, []string{"--tokens is required"}},
		{"unreadable tokens", []string{"--tokens", filepath.Join(dir, "nope.json"), "--credentials", creds}, []string{"--tokens", "nope.json", "no such file"}},
		{"bad tenant", []string{"--tokens", badTenant, "--credentials", creds}, []string{"--tokens " + badTenant, "tenant"}},
		{"no credentials", []string{"--tokens", tokens}, []string{"--credentials is required"}},
		{"bad credentials", []string{"--tokens", tokens, "--credentials", badCreds}, []string{"--credentials " + badCreds, "JSON object"}},
		{"worker of an unknown tenant", []string{"--tokens", tokens, "--credentials", creds, "--worker-capability", "gamma=x"},
			[]string{"--worker-capability", `tenant "gamma" is not in --tokens`}},
		{"worker without capabilities", []string{"--tokens", tokens, "--credentials", creds, "--worker-capability", "acme"},
			[]string{"--worker-capability", "TENANT=CAP"}},
		{"bad capability", []string{"--tokens", tokens, "--credentials", creds, "--worker-capability", "acme=ok,Not.OK"},
			[]string{"--worker-capability", `"Not.OK"`}},
		{"bad bcrypt cost", []string{"--tokens", tokens, "--credentials", creds, "--bcrypt-cost", "99"}, []string{"--bcrypt-cost 99"}},
		{"unwritable output", []string{"--tokens", tokens, "--credentials", creds, "--bcrypt-cost", "4", "--out", filepath.Join(dir, "no", "such", "dir.conf")},
			[]string{"--out", "no such file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, append([]string{"nats-config"}, c.args...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, stderr)
			}
			if strings.Contains(stdout, "accounts {") {
				t.Errorf("a configuration was printed despite the error")
			}
			for _, s := range c.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q lacks %q", stderr, s)
				}
			}
			if strings.Contains(stderr, "0123456789") {
				t.Errorf("stderr shows a token: %s", stderr)
			}
		})
	}
}
