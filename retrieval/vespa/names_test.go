package vespa_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/vespa"
	"github.com/agentbus/agentbus/subjects"
)

// vespaIdent is the grammar of Vespa schema and document type names.
var vespaIdent = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func TestDocType(t *testing.T) {
	for _, tc := range []struct{ tenant, want string }{
		{"default", "chunk_default"},
		{"acme", "chunk_acme"},
		{"acme-eu", "chunk_acme_heu"},
		{"acme_eu", "chunk_acme__eu"},
		{"a_h", "chunk_a__h"},
		{"a-", "chunk_a_h"},
		{"a__", "chunk_a____"},
		{"0", "chunk_0"},
		{"x-_-y", "chunk_x_h___hy"},
	} {
		t.Run(tc.tenant, func(t *testing.T) {
			got, err := vespa.DocType("chunk", tc.tenant)
			if err != nil || got != tc.want {
				t.Fatalf("DocType(%q) = %q, %v; want %q", tc.tenant, got, err, tc.want)
			}
			if !vespaIdent.MatchString(got) {
				t.Errorf("%q is not a Vespa identifier", got)
			}
			back, err := vespa.TenantOf("chunk", got)
			if err != nil || back != tc.tenant {
				t.Errorf("TenantOf(%q) = %q, %v; want %q", got, back, err, tc.tenant)
			}
		})
	}
}

func TestDocTypeInjective(t *testing.T) {
	// Every tenant over a small alphabet up to length 4: no two share a
	// document type.
	alphabet := "a0_-"
	seen := map[string]string{}
	var gen func(prefix string)
	gen = func(prefix string) {
		if subjects.ValidTenant(prefix) == nil {
			dt, err := vespa.DocType("chunk", prefix)
			if err != nil {
				t.Fatalf("DocType(%q): %v", prefix, err)
			}
			if other, dup := seen[dt]; dup {
				t.Fatalf("tenants %q and %q both map to %q", other, prefix, dt)
			}
			seen[dt] = prefix
		}
		if len(prefix) == 4 {
			return
		}
		for _, c := range alphabet {
			gen(prefix + string(c))
		}
	}
	gen("")
	if len(seen) < 100 {
		t.Fatalf("only %d tenants generated", len(seen))
	}
}

func TestDocTypeRefuses(t *testing.T) {
	for _, tenant := range []string{"", "Acme", "a.b", "-a", "_a", "a b", "a/b", strings.Repeat("x", 64)} {
		if _, err := vespa.DocType("chunk", tenant); !errors.Is(err, retrieval.ErrInvalidTenant) {
			t.Errorf("DocType(%q) error = %v, want ErrInvalidTenant", tenant, err)
		}
	}
	for _, dt := range []string{"chunk", "other_acme", "chunk_acme_", "chunk_a_x", "chunk_Acme", "chunk__a"} {
		if _, err := vespa.TenantOf("chunk", dt); !errors.Is(err, retrieval.ErrInvalidTenant) {
			t.Errorf("TenantOf(%q) error = %v, want ErrInvalidTenant", dt, err)
		}
	}
}

func FuzzDocType(f *testing.F) {
	for _, s := range []string{"default", "acme-eu", "acme_eu", "a-_", "A", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tenant string) {
		dt, err := vespa.DocType("chunk", tenant)
		if (err == nil) != (subjects.ValidTenant(tenant) == nil) {
			t.Fatalf("DocType(%q) error %v disagrees with ValidTenant", tenant, err)
		}
		if err != nil {
			return
		}
		if !vespaIdent.MatchString(dt) {
			t.Fatalf("DocType(%q) = %q, not a Vespa identifier", tenant, dt)
		}
		if back, err := vespa.TenantOf("chunk", dt); err != nil || back != tenant {
			t.Fatalf("TenantOf(DocType(%q)) = %q, %v", tenant, back, err)
		}
	})
}

func ExampleDocType() {
	for _, tenant := range []string{"default", "acme-eu", "acme_eu"} {
		dt, _ := vespa.DocType("chunk", tenant)
		fmt.Println(tenant, "→", dt)
	}
	// Output:
	// default → chunk_default
	// acme-eu → chunk_acme_heu
	// acme_eu → chunk_acme__eu
}
