package a2aagent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentbus/agentbus/subjects"
)

// ErrCollision is returned (wrapped, naming both sides) when two skills
// would be served as one capability: two skills of one agent whose ids
// read the same once made tokens, or a skill and a capability something
// else in the worker serves.
var ErrCollision = errors.New("a2aagent: capability collision")

// Capability is the capability a skill is served as: prefix + the skill's
// id, lowercased, every run of characters a subject token may not hold
// ('.', '*', '>', spaces, …) replaced by one '_', trimmed of leading
// '_'/'-' and cut to 63 characters. It fails when nothing usable is left.
func Capability(prefix, skillID string) (string, error) {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(prefix + skillID) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		switch {
		case ok:
			b.WriteRune(r)
			sep = false
		case !sep:
			b.WriteByte('_')
			sep = true
		}
	}
	name := strings.TrimLeft(b.String(), "_-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "_-")
	}
	if err := subjects.ValidCapability(name); err != nil {
		return "", fmt.Errorf("a2aagent: skill %q (prefix %q) makes no capability: %w", skillID, prefix, err)
	}
	return name, nil
}
