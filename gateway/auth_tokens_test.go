package gateway_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/schemas"
)

const secretA = "aaaa-0123456789abcdef"

func TestParseTokens(t *testing.T) {
	want := []gateway.Token{
		{Token: "acme-client-0123456789abcdef", Tenant: "acme", Role: gateway.RoleClient},
		{Token: "ops-admin-0123456789abcdef", Tenant: "ops", Role: gateway.RoleAdmin},
	}
	for name, doc := range map[string]string{
		"list": `[{"token": "acme-client-0123456789abcdef", "tenant": "acme", "role": "client"},
		          {"token": "ops-admin-0123456789abcdef", "tenant": "ops", "role": "admin"}]`,
		"object": ` {"ops-admin-0123456789abcdef": {"tenant": "ops", "role": "admin"},
		          "acme-client-0123456789abcdef": {"role": "client", "tenant": "acme"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := gateway.ParseTokens([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("ParseTokens = %v, want %v", got, want)
			}
		})
	}
}

func TestParseTokensNamesTheBadField(t *testing.T) {
	cases := []struct {
		name, doc string
		pointers  []string
	}{
		{"not json", `[{"token"`, []string{""}},
		{"a string", `"tok"`, []string{""}},
		{"empty list", `[]`, []string{""}},
		{"empty object", `{}`, []string{""}},
		{"missing role", `[{"token": "` + secretA + `", "tenant": "acme"}]`, []string{"/0/role"}},
		{"unknown role", `[{"token": "` + secretA + `", "tenant": "acme", "role": "root"}]`, []string{"/0/role"}},
		{"bad tenant", `[{"token": "` + secretA + `", "tenant": "Acme Corp", "role": "client"}]`, []string{"/0/tenant"}},
		{"tenant in the wrong place", `[{"token": "` + secretA + `", "tenant": "a", "role": "client", "tenants": []}]`, []string{"/0/tenants"}},
		{"token not a string", `[{"token": 12, "tenant": "acme", "role": "client"}]`, []string{"/0/token"}},
		{"short token", `[{"token": "short", "tenant": "acme", "role": "client"}]`, []string{"/0/token"}},
		{"token with a slash", `[{"token": "abcd/0123456789abcdef", "tenant": "acme", "role": "client"}]`, []string{"/0/token"}},
		{"duplicate token", `[{"token": "` + secretA + `", "tenant": "a", "role": "client"}, {"token": "` + secretA + `", "tenant": "b", "role": "admin"}]`, []string{"/1/token"}},
		{"object: bad grant", `{"` + secretA + `": {"tenant": "acme", "role": "boss"}}`, []string{"/aaaa…/role"}},
		{"object: grant not an object", `{"` + secretA + `": "acme"}`, []string{"/aaaa…"}},
		{"object: short token", `{"short": {"tenant": "acme", "role": "client"}}`, []string{"/…"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := gateway.ParseTokens([]byte(c.doc))
			var ve *schemas.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("ParseTokens = %v, want a *schemas.ValidationError", err)
			}
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Pointer)
			}
			if !slices.Equal(got, c.pointers) {
				t.Fatalf("pointers %q, want %q: %v", got, c.pointers, err)
			}
			if strings.Contains(err.Error(), "0123456789") {
				t.Errorf("the error shows a token: %v", err)
			}
		})
	}
}

func TestTokenNeverPrints(t *testing.T) {
	tok := gateway.Token{Token: secretA, Tenant: "acme", Role: gateway.RoleAdmin}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("loaded", "token", tok)
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok), logs.String()} {
		if strings.Contains(s, "0123456789") {
			t.Errorf("printed a secret: %s", s)
		}
		if !strings.Contains(s, "acme") {
			t.Errorf("printed no tenant: %s", s)
		}
	}
}

func TestValidateNamesTokensByIndex(t *testing.T) {
	err := gateway.AuthConfig{Tokens: []gateway.Token{
		{Token: secretA, Tenant: "acme", Role: gateway.RoleClient},
		{Token: "tiny", Tenant: "", Role: "root"},
		{Token: secretA, Tenant: "b", Role: gateway.RoleViewer},
	}}.Validate()
	for _, want := range []string{"#1: subjects: tenant", `#1: role "root"`, "token #1: a token is", "token #2: the same token as #0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "0123456789") {
		t.Errorf("Validate shows a token: %v", err)
	}
}

// FuzzParseTokens: the decoder never panics, and what it accepts is a valid
// configuration.
func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{
		`[{"token": "` + secretA + `", "tenant": "acme", "role": "client"}]`,
		`{"` + secretA + `": {"tenant": "acme", "role": "viewer"}}`,
		`[]`, `{}`, `null`, `[{"token": "a~b/c", "tenant": "x", "role": "admin"}]`, `{"a~1/b": 1}`, "\xff", ` {`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		toks, err := gateway.ParseTokens(data)
		if err != nil {
			if toks != nil {
				t.Fatalf("tokens %v beside error %v", toks, err)
			}
			return
		}
		if len(toks) == 0 {
			t.Fatal("accepted an empty table")
		}
		if err := (gateway.AuthConfig{Tokens: toks}).Validate(); err != nil {
			t.Fatalf("accepted %q but Validate says %v", data, err)
		}
	})
}
