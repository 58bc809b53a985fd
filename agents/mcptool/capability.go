package mcptool

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/subjects"
)

// capabilityMax is the longest capability (subjects.TokenPattern).
const capabilityMax = 63

// Capability is the capability of tool on server when no other tool of
// the server maps to it: tool_<server>_<tool>, the tool's name lowercased
// with every character but a-z, 0-9, '_' and '-' as '_', cut with a hash
// of the name when too long. Capabilities resolves collisions.
func Capability(server, tool string) string {
	c := "tool_" + server + "_" + sanitize(tool)
	if len(c) > capabilityMax {
		return hashed(server, tool)
	}
	return c
}

// hashed is tool_<server>_<tool> cut to leave room for "-" and 8 hex
// digits of an FNV-1a hash of the tool's real name.
func hashed(server, tool string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tool))
	c := "tool_" + server + "_" + sanitize(tool)
	return fmt.Sprintf("%s-%08x", c[:min(len(c), capabilityMax-9)], h.Sum32())
}

func sanitize(tool string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, tool)
}

// Capabilities maps each tool name of server to its capability, every
// one distinct and valid. Tools whose names map as they are (already
// lowercase and plain) claim theirs first, in name order; a tool whose
// capability is taken gets the hashed form.
func Capabilities(server string, tools []string) map[string]string {
	names := slices.Clone(tools)
	slices.Sort(names)
	lossless := func(t string) bool { return sanitize(t) == t }
	slices.SortStableFunc(names, func(a, b string) int {
		switch la, lb := lossless(a), lossless(b); {
		case la && !lb:
			return -1
		case lb && !la:
			return 1
		}
		return 0
	})
	out := make(map[string]string, len(names))
	taken := map[string]bool{}
	for _, t := range names {
		c := Capability(server, t)
		if taken[c] {
			c = hashed(server, t)
		}
		if taken[c] || subjects.ValidCapability(c) != nil {
			continue // a hash collision of two tool names: left out
		}
		taken[c] = true
		out[t] = c
	}
	return out
}
