package retrieval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Rank is a fused hit's rank (from 1) in one profile.
type Rank struct {
	Profile string
	Rank    int
}

// Ranks are a fused hit's ranks, one per profile that found it, in
// profile name order. In JSON they are an object, {"bm25": 1, "vector": 3}.
// A slice rather than a map: fusing keeps one per hit, and a few hundred
// small maps cost more than the whole fusion (BenchmarkFuse3x100).
type Ranks []Rank

// Of returns the rank in profile, 0 if the profile did not find the hit.
func (r Ranks) Of(profile string) int {
	for _, x := range r {
		if x.Profile == profile {
			return x.Rank
		}
	}
	return 0
}

// Map returns the ranks as a map from profile to rank.
func (r Ranks) Map() map[string]int {
	m := make(map[string]int, len(r))
	for _, x := range r {
		m[x.Profile] = x.Rank
	}
	return m
}

// MarshalJSON writes the ranks as an object.
func (r Ranks) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(x.Profile)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(x.Rank))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object of ranks; the result is in profile order.
func (r *Ranks) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*r = nil
		return nil
	}
	var m map[string]int
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("retrieval: ranks: %w", err)
	}
	out := make(Ranks, 0, len(m))
	for p, n := range m {
		out = append(out, Rank{Profile: p, Rank: n})
	}
	slices.SortFunc(out, func(a, b Rank) int { return strings.Compare(a.Profile, b.Profile) })
	*r = out
	return nil
}
