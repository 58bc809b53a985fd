package enhance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/schemas"
)

// FuzzEnhance checks the invariants of any non-blank query: the original
// comes first, no two variants are equal ignoring case, at most
// MaxVariants, and the output passes its schema.
func FuzzEnhance(f *testing.F) {
	for _, s := range []string{"How do I speed up postgres queries?", `error "x" in Redis 7`, "the", "Ünïcödé QUERY?", "what is"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if strings.TrimSpace(q) == "" {
			return
		}
		out := Enhance(q, 0)
		if len(out.Variants) == 0 || out.Variants[0] != out.Query || len(out.Variants) > MaxVariants {
			t.Fatalf("variants %q for query %q", out.Variants, out.Query)
		}
		seen := map[string]bool{}
		for _, v := range out.Variants {
			if seen[strings.ToLower(v)] {
				t.Fatalf("variant %q twice in %q", v, out.Variants)
			}
			seen[strings.ToLower(v)] = true
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas.Validate(OutputSchema, b); err != nil {
			t.Fatalf("output fails its schema: %v", err)
		}
	})
}
