package subjects

import "testing"

// TestMatchTokenIsPattern: the hand-written matcher accepts exactly what
// the documented patterns do.
func TestMatchTokenIsPattern(t *testing.T) {
	long := "a123456789012345678901234567890123456789012345678901234567890"
	cases := []string{"", "a", "A", "0", "-", "_", "a-", "a_b", "-a", "_a", "a.b", "a b", "a*", "a>", "Ab", "aB",
		"é", "a\x00", "a\n", long, long + "b", long + "bc", long + "bcd", "abc/def", "ß"}
	for _, s := range cases {
		for _, upper := range []bool{false, true} {
			p := tokenPattern
			if upper {
				p = stepPattern
			}
			if got, want := matchToken(s, upper), p.MatchString(s); got != want {
				t.Errorf("matchToken(%q, %v) = %v, the pattern says %v", s, upper, got, want)
			}
		}
	}
}

func FuzzMatchToken(f *testing.F) {
	f.Add("a-b_c", false)
	f.Add("Ab-1", true)
	f.Fuzz(func(t *testing.T, s string, upper bool) {
		p := tokenPattern
		if upper {
			p = stepPattern
		}
		if got, want := matchToken(s, upper), p.MatchString(s); got != want {
			t.Errorf("matchToken(%q, %v) = %v, the pattern says %v", s, upper, got, want)
		}
	})
}
