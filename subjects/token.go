package subjects

import (
	"errors"
	"fmt"
	"regexp"
)

// ErrInvalidToken is returned (wrapped in a *TokenError) when a tenant id,
// workflow id, capability or step id is not a single safe token.
var ErrInvalidToken = errors.New("subjects: invalid token")

// tokenPattern is the grammar of tenant ids, workflow ids and capabilities:
// one lowercase subject token, never '.', '*', '>' or whitespace.
var tokenPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// stepPattern is the grammar of step ids. Step ids never appear in subjects,
// only in headers and dedup keys, so upper case is allowed; '/' is not,
// because it separates the parts of a Nats-Msg-Id.
var stepPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// TokenPattern is the tenant/workflow/capability grammar, for documentation and schemas.
const TokenPattern = `^[a-z0-9][a-z0-9_-]{0,62}$`

// StepPattern is the step id grammar, for documentation and schemas.
const StepPattern = `^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`

// TokenError says which field held an unsafe value and what the value was.
type TokenError struct {
	Field string // "tenant", "workflow", "capability" or "step"
	Value string
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("subjects: %s id %q is not a single token matching %s", e.Field, e.Value, patternFor(e.Field))
}

// Unwrap lets errors.Is(err, ErrInvalidToken) hold.
func (e *TokenError) Unwrap() error { return ErrInvalidToken }

func patternFor(field string) string {
	if field == "step" {
		return StepPattern
	}
	return TokenPattern
}

func check(field, value string) error {
	if !matchToken(value, field == "step") {
		return &TokenError{Field: field, Value: value}
	}
	return nil
}

// matchToken reports whether s matches tokenPattern, or stepPattern if
// upper is set, without a regular expression: every event a gateway
// decodes checks three ids (TestMatchTokenIsPattern holds it to them).
func matchToken(s string, upper bool) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c >= 'A' && c <= 'Z' && upper:
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// ValidTenant reports whether id is a valid tenant id.
func ValidTenant(id string) error { return check("tenant", id) }

// ValidWorkflow reports whether id is a valid workflow id.
func ValidWorkflow(id string) error { return check("workflow", id) }

// ValidCapability reports whether name is a valid capability.
func ValidCapability(name string) error { return check("capability", name) }

// ValidStep reports whether id is a valid step id.
func ValidStep(id string) error { return check("step", id) }
