package natsauth_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/agentbus/agentbus/internal/natsauth"
	"github.com/agentbus/agentbus/subjects"
)

func ExampleStepConsumer() {
	name, _ := natsauth.StepConsumer("acme", "translate")
	fmt.Println(name)
	fmt.Println(natsauth.ClientUser("acme"), natsauth.WorkerUser("acme"), natsauth.TenantAccount("acme"))
	// Output:
	// acme-STEP-translate
	// acme.client acme.worker TENANT_acme
}

// TestNamesNeverCollide: whatever the tenant ids, no two users, accounts
// or tenant step consumers share a name, and no tenant's is a system one.
func TestNamesNeverCollide(t *testing.T) {
	tenants := []string{"agentbus", "sys", "worker", "a", "a-client", "a-worker", "client", "agentbus-worker", "a-step-b", "tenant_x"}
	var cfg natsauth.Config
	for _, id := range tenants {
		cfg.Tenants = append(cfg.Tenants, natsauth.Tenant{ID: id, Capabilities: []string{"b", "step-b", "b-c", "c"}})
	}
	m, err := natsauth.NewModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	users := m.Users()
	if len(users) != 2*len(tenants)+4 {
		t.Fatalf("%d users for %d tenants: %v", len(users), len(tenants), users)
	}
	if dup := duplicates(users); len(dup) > 0 {
		t.Errorf("users given twice: %v", dup)
	}
	var accounts, consumers []string
	for _, a := range m.Accounts {
		accounts = append(accounts, a.Name)
		for _, e := range a.Exports {
			if rest, ok := strings.CutPrefix(e.Subject, "$JS.API.CONSUMER.MSG.NEXT.AGENTBUS_STEPS."); ok {
				consumers = append(consumers, rest)
			}
		}
	}
	if dup := duplicates(accounts); len(dup) > 0 {
		t.Errorf("accounts given twice: %v", dup)
	}
	if dup := duplicates(consumers); len(dup) > 0 {
		t.Errorf("step consumers given twice: %v", dup)
	}
	for _, c := range consumers {
		if strings.HasPrefix(c, "step-") {
			t.Errorf("tenant consumer %s looks like a built-in step-<capability> consumer", c)
		}
	}
	// The classic ambiguity of a plain separator.
	x, _ := natsauth.StepConsumer("a", "b-c")
	y, _ := natsauth.StepConsumer("a-b", "c")
	if x == y {
		t.Errorf("StepConsumer(a, b-c) = StepConsumer(a-b, c) = %s", x)
	}
}

func duplicates(ss []string) []string {
	seen := map[string]int{}
	var out []string
	for _, s := range ss {
		if seen[s]++; seen[s] == 2 {
			out = append(out, s)
		}
	}
	return out
}

// TestTenantGrantsStayUnderTheTenant: every subject a tenant account
// imports and every subject its users may publish or subscribe to names
// that tenant (or is keyed by a consumer name, or is the account's own
// inbox) — the model itself, checked independently of a server.
func TestTenantGrantsStayUnderTheTenant(t *testing.T) {
	m, err := natsauth.NewModel(natsauth.Config{Tenants: []natsauth.Tenant{{ID: "acme", Capabilities: []string{"translate"}}, {ID: "beta"}}})
	if err != nil {
		t.Fatal(err)
	}
	byName := regexp.MustCompile(`^(\$JS\.API|AGENTBUS\.API)\.CONSUMER\.(MSG\.NEXT|INFO|DELETE)\.AGENTBUS_EVENTS\.\*$`)
	for _, a := range m.Accounts {
		if a.Tenant == "" {
			continue
		}
		own := func(s string) bool {
			return strings.Contains(s, "agentbus."+a.Tenant+".") || strings.Contains(s, "."+a.Tenant+"-STEP-") ||
				byName.MatchString(s) || s == "_INBOX.>"
		}
		for _, im := range a.Imports {
			if !own(im.Subject) || !own(im.Local()) {
				t.Errorf("%s imports %s as %s", a.Name, im.Subject, im.Local())
			}
		}
		for _, u := range a.Users {
			for _, s := range slices.Concat(u.Publish, u.Subscribe) {
				if !own(s) {
					t.Errorf("%s may use %s", u.Name, s)
				}
			}
		}
	}
	ab, _ := m.Account(natsauth.AccountAgentbus)
	for _, e := range ab.Exports {
		if len(e.Accounts) == 0 {
			t.Errorf("export %s is open to every account", e.Subject)
		}
		if len(e.Accounts) == 1 && !strings.Contains(e.Subject, strings.TrimPrefix(e.Accounts[0], "TENANT_")) {
			t.Errorf("export %s is for %s", e.Subject, e.Accounts[0])
		}
	}
}

func TestConfigValidateNamesEveryProblem(t *testing.T) {
	err := natsauth.Config{Tenants: []natsauth.Tenant{
		{ID: "Acme"}, {ID: "beta", Capabilities: []string{"ok", "Not.OK", "ok"}}, {ID: "beta"}, {ID: "a.b"},
	}}.Validate()
	if !errors.Is(err, subjects.ErrInvalidToken) {
		t.Fatalf("want ErrInvalidToken, got %v", err)
	}
	for _, want := range []string{`"Acme"`, `"Not.OK"`, "capability ok given twice", "tenant beta given twice", `"a.b"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
	if _, err := natsauth.NewModel(natsauth.Config{Tenants: []natsauth.Tenant{{ID: "a b"}}}); err == nil {
		t.Error("NewModel took a tenant with a space")
	}
}

// TestRenderWritesOnlyHashes: the configuration holds a bcrypt hash of
// each user's password and never the password.
func TestRenderWritesOnlyHashes(t *testing.T) {
	m := model(t)
	creds := natsauth.Credentials{}
	if _, _, err := creds.Sync(m.Users()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := m.Render(&out, creds, natsauth.RenderOptions{Cost: bcrypt.MinCost}); err != nil {
		t.Fatal(err)
	}
	conf := out.String()
	for user, pw := range creds {
		if strings.Contains(conf, pw) {
			t.Errorf("the configuration shows %s's password", user)
		}
		hash := regexp.MustCompile(`user: "` + regexp.QuoteMeta(user) + `", password: "([^"]+)"`).FindStringSubmatch(conf)
		if hash == nil {
			t.Errorf("no password line for %s", user)
			continue
		}
		if err := bcrypt.CompareHashAndPassword([]byte(hash[1]), []byte(pw)); err != nil {
			t.Errorf("%s's hash does not match its password: %v", user, err)
		}
	}
	delete(creds, natsauth.WorkerUser("beta"))
	if err := m.Render(&bytes.Buffer{}, creds, natsauth.RenderOptions{Cost: bcrypt.MinCost}); !errors.Is(err, natsauth.ErrMissingPassword) ||
		!strings.Contains(err.Error(), "beta.worker") {
		t.Errorf("render without beta.worker's password: %v", err)
	}
}

// TestCredentialsKeepDropAndSave: a re-run keeps every password it had,
// adds the new users', drops the removed users', and the file is its
// owner's only.
func TestCredentialsKeepDropAndSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "creds.json")
	c, err := natsauth.LoadCredentials(path)
	if err != nil || len(c) != 0 {
		t.Fatalf("a missing file: %v %v, want an empty table", c, err)
	}
	added, dropped, err := c.Sync([]string{"a", "b"})
	if err != nil || !slices.Equal(added, []string{"a", "b"}) || len(dropped) != 0 {
		t.Fatalf("first sync: %v %v %v", added, dropped, err)
	}
	if len(c["a"]) != 48 || c["a"] == c["b"] {
		t.Errorf("generated passwords %q and %q", c["a"], c["b"])
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	again, err := natsauth.LoadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	added, dropped, err = again.Sync([]string{"b", "c"})
	if err != nil || !slices.Equal(added, []string{"c"}) || !slices.Equal(dropped, []string{"a"}) || again["b"] != c["b"] {
		t.Errorf("second sync: added %v dropped %v (%v); b kept its password: %v", added, dropped, err, again["b"] == c["b"])
	}
	for _, bad := range []string{`[]`, `{"a": ""}`, `{"a": 1}`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := natsauth.LoadCredentials(path); err == nil {
			t.Errorf("LoadCredentials took %s", bad)
		}
	}
}
