package subjects_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/agentbus/agentbus/subjects"
)

// FuzzBuilders checks the package's one promise for arbitrary input: a
// builder either refuses with ErrInvalidToken or returns a name that stays
// under "agentbus.<tenant>." with exactly four non-empty tokens, none of which
// holds a wildcard or whitespace, and that Parse takes back apart.
func FuzzBuilders(f *testing.F) {
	seeds := [][2]string{
		{"acme", "wf1"},
		{"acme", "web-search"},
		{"a", "b"},
		{len63, len63},
		{len64, "x"},
		{"acme", len64},
		{"", ""},
		{"acme", ""},
		{"acme.evil", "x"},
		{"acme", "x.y"},
		{"*", "x"},
		{"acme", "*"},
		{">", ">"},
		{"acme", "a b"},
		{"acme ", "x"},
		{"acme", "x\n"},
		{"Acme", "X"},
		{"café", "日本"},
		{"acme", "\x00"},
		{"-a", "_b"},
		{"acme", "wf1\tx"},
		{"acme", "a\u00a0b"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, tenant, x string) {
		for _, b := range tenantBuilders {
			s, err := b.fn(tenant, x)
			if err != nil {
				checkRefusal(t, b.name, err, s)
				continue
			}
			checkSubject(t, b.name, tenant, s)
			p, err := subjects.Parse(s)
			if err != nil {
				t.Fatalf("%s(%q, %q) = %q, but Parse fails: %v", b.name, tenant, x, s, err)
			}
			want := subjects.Parsed{Tenant: tenant, Kind: b.kind, Last: b.last(x)}
			if p != want {
				t.Fatalf("Parse(%s(%q, %q) = %q) = %+v, want %+v", b.name, tenant, x, s, p, want)
			}
		}

		if s, err := subjects.StepFilter(x); err != nil {
			checkRefusal(t, "StepFilter", err, s)
		} else {
			toks := strings.Split(s, ".")
			if len(toks) != 4 || toks[0] != subjects.Root || toks[1] != "*" || toks[2] != "step" || toks[3] != x {
				t.Fatalf("StepFilter(%q) = %q, want agentbus.*.step.%s", x, s, x)
			}
			checkToken(t, "StepFilter", s, toks[3])
		}

		if s, err := subjects.StepConsumer(x); err != nil {
			checkRefusal(t, "StepConsumer", err, s)
		} else {
			if s != "step-"+x {
				t.Fatalf("StepConsumer(%q) = %q", x, s)
			}
			checkToken(t, "StepConsumer", s, s)
		}

		if s, err := subjects.CheckpointKey(tenant, x); err != nil {
			checkRefusal(t, "CheckpointKey", err, s)
		} else {
			toks := strings.Split(s, ".")
			if len(toks) != 2 || toks[0] != tenant || toks[1] != x {
				t.Fatalf("CheckpointKey(%q, %q) = %q, want exactly two tokens %q and %q", tenant, x, s, tenant, x)
			}
			for _, tok := range toks {
				checkToken(t, "CheckpointKey", s, tok)
			}
		}

		// The validators agree with what the builders accept.
		_, stepErr := subjects.Step(tenant, x)
		if (stepErr == nil) != (subjects.ValidTenant(tenant) == nil && subjects.ValidCapability(x) == nil) {
			t.Fatalf("Step(%q, %q) err = %v disagrees with the validators", tenant, x, stepErr)
		}
		// Every valid lowercase token is also a valid step id.
		if subjects.ValidWorkflow(x) == nil && subjects.ValidStep(x) != nil {
			t.Fatalf("%q is a valid workflow id but not a valid step id", x)
		}
	})
}

func checkRefusal(t *testing.T, name string, err error, s string) {
	t.Helper()
	if !errors.Is(err, subjects.ErrInvalidToken) {
		t.Fatalf("%s: error %v is not ErrInvalidToken", name, err)
	}
	var te *subjects.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("%s: error %v is not a *TokenError", name, err)
	}
	switch te.Field {
	case "tenant", "workflow", "capability":
	default:
		t.Fatalf("%s: TokenError.Field = %q", name, te.Field)
	}
	if s != "" {
		t.Fatalf("%s: returned %q alongside error %v", name, s, err)
	}
}

func checkSubject(t *testing.T, name, tenant, s string) {
	t.Helper()
	prefix := subjects.Root + "." + tenant + "."
	if !strings.HasPrefix(s, prefix) {
		t.Fatalf("%s: %q does not start with %q", name, s, prefix)
	}
	toks := strings.Split(s, ".")
	if len(toks) != 4 {
		t.Fatalf("%s: %q has %d tokens, want 4", name, s, len(toks))
	}
	for _, tok := range toks {
		checkToken(t, name, s, tok)
	}
}

func checkToken(t *testing.T, name, s, tok string) {
	t.Helper()
	if tok == "" {
		t.Fatalf("%s: %q has an empty token", name, s)
	}
	if strings.ContainsAny(tok, "*>.") {
		t.Fatalf("%s: %q token %q holds a wildcard or separator", name, s, tok)
	}
	if strings.IndexFunc(tok, unicode.IsSpace) >= 0 || strings.ContainsAny(tok, string([]byte{0})+"\u0085\u00a0") {
		t.Fatalf("%s: %q token %q holds whitespace", name, s, tok)
	}
}
