package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"

	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// Role says what a token may do.
type Role string

// The roles a token can have.
const (
	// RoleClient acts on its own tenant's workflows: submit, read, follow,
	// control — its user's only when it names one, the tenant-wide ones
	// otherwise. X-Agentbus-Tenant is ignored for it.
	RoleClient Role = "client"
	// RoleAdmin acts on any tenant, chosen per request by X-Agentbus-Tenant
	// (default: the token's own tenant), and sees all its workflows unless
	// X-Agentbus-User names a user to act for.
	RoleAdmin Role = "admin"
	// RoleViewer reads what a client token of its tenant and user would
	// see: GET and HEAD only; any other method is 403.
	RoleViewer Role = "viewer"
)

// Token grants the bearer of a secret a tenant and a role, and optionally
// names the user it stands for: that user's workflows carry the user to
// every step (the memory agent keeps the user's facts apart, sessions
// are the user's own) and are seen by that user's tokens and admins only;
// a token with a user sees no other workflow (auth_scope.go). Its String,
// GoString and LogValue never show the secret, so a Token can be logged.
type Token struct {
	Token  string `json:"token"`
	Tenant string `json:"tenant"`
	Role   Role   `json:"role"`
	// User, if set, is a subject token (like a tenant id).
	User string `json:"user,omitempty"`
	// Weight, if set, is the tenant's share of a busy capability (flow
	// control): the orchestrator reads it from the table (TenantWeights).
	Weight int `json:"weight,omitempty"`
}

// String describes the grant without the secret.
func (t Token) String() string {
	if t.User != "" {
		return fmt.Sprintf("token(tenant=%s role=%s user=%s)", t.Tenant, t.Role, t.User)
	}
	return fmt.Sprintf("token(tenant=%s role=%s)", t.Tenant, t.Role)
}

// GoString is String, so %#v cannot print the secret either.
func (t Token) GoString() string { return t.String() }

// LogValue logs the grant without the secret.
func (t Token) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("tenant", t.Tenant), slog.String("role", string(t.Role))}
	if t.User != "" {
		attrs = append(attrs, slog.String("user", t.User))
	}
	return slog.GroupValue(attrs...)
}

// secretPattern is the grammar of token strings: characters that are legal
// in an Authorization: Bearer value, a cookie value and a WebSocket
// subprotocol name alike (RFC 6750 b64token ∩ RFC 7230 tchar), at least 16
// of them so that a token cannot be guessed. `openssl rand -hex 32` makes one.
var secretPattern = regexp.MustCompile(`^[A-Za-z0-9._~+-]{16,512}$`)

// secretRule is secretPattern in words, for error messages.
const secretRule = "a token is 16 to 512 characters of A-Z a-z 0-9 . _ ~ + -"

// ParseTokens decodes a token table, either a JSON array of
// {"token", "tenant", "role", "user"} or a JSON object from token to
// {"tenant", "role", "user"} ("user" optional), validated against the schema schemas.Tokens. An
// invalid table is a *schemas.ValidationError naming the JSON pointer of
// every problem; in the object form the token in a pointer is shortened to
// its first four characters, so the error can be logged.
func ParseTokens(data []byte) ([]Token, error) {
	object := firstNonSpace(data) == '{'
	if err := schemas.Validate(schemas.Tokens, data); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) && object {
			for i := range ve.Problems {
				ve.Problems[i].Pointer = redactTokenPointer(ve.Problems[i].Pointer)
			}
		}
		return nil, fmt.Errorf("gateway: token table: %w", err)
	}
	var out []Token
	var where []string // the JSON pointer of each token, redacted
	if object {
		var m map[string]struct {
			Tenant string `json:"tenant"`
			Role   Role   `json:"role"`
			User   string `json:"user"`
			Weight int    `json:"weight"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("gateway: token table: %w", err)
		}
		for tok, g := range m {
			out = append(out, Token{Token: tok, Tenant: g.Tenant, Role: g.Role, User: g.User, Weight: g.Weight})
		}
		// Map order is random; sort so that errors and logs are stable.
		sort.Slice(out, func(i, j int) bool { return out[i].Token < out[j].Token })
		for _, t := range out {
			where = append(where, "/"+escapeRefToken(redactToken(t.Token)))
		}
	} else {
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("gateway: token table: %w", err)
		}
		for i := range out {
			where = append(where, fmt.Sprintf("/%d/token", i))
		}
	}
	problems := checkSecrets(out, where)
	problems = append(problems, checkWeights(out, where)...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("gateway: token table: %w", &schemas.ValidationError{Schema: schemas.Tokens, Problems: problems})
	}
	return out, nil
}

// checkSecrets checks what the schema leaves to Go: the grammar of each
// token and that no token appears twice. where[i] names tokens[i].
func checkSecrets(tokens []Token, where []string) []schemas.Problem {
	var out []schemas.Problem
	seen := map[[sha256.Size]byte]string{}
	for i, t := range tokens {
		if !secretPattern.MatchString(t.Token) {
			out = append(out, schemas.Problem{Pointer: where[i], Message: secretRule})
			continue
		}
		d := sha256.Sum256([]byte(t.Token))
		if first, dup := seen[d]; dup {
			out = append(out, schemas.Problem{Pointer: where[i], Message: "the same token as " + first})
			continue
		}
		seen[d] = where[i]
	}
	return out
}

// validTokens reports every problem with a programmatic token list, for
// AuthConfig.Validate; tokens are named by index, never shown.
func validTokens(tokens []Token) error {
	var errs []error
	where := make([]string, len(tokens))
	for i, t := range tokens {
		where[i] = fmt.Sprintf("#%d", i)
		if err := subjects.ValidTenant(t.Tenant); err != nil {
			errs = append(errs, fmt.Errorf("gateway: auth token #%d: %w", i, err))
		}
		if t.User != "" {
			if err := subjects.ValidUser(t.User); err != nil {
				errs = append(errs, fmt.Errorf("gateway: auth token #%d: %w", i, err))
			}
		}
		switch t.Role {
		case RoleClient, RoleAdmin, RoleViewer:
		default:
			errs = append(errs, fmt.Errorf("gateway: auth token #%d: role %q: want client, admin or viewer", i, t.Role))
		}
	}
	for _, p := range checkSecrets(tokens, where) {
		errs = append(errs, fmt.Errorf("gateway: auth token %s: %s", p.Pointer, p.Message))
	}
	return errors.Join(errs...)
}

func firstNonSpace(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// redact shortens a token to its first four characters.
func redactToken(tok string) string {
	r := []rune(tok)
	if len(r) < 12 {
		return "…"
	}
	return string(r[:4]) + "…"
}

// redactTokenPointer redacts the first reference token of a JSON pointer, which
// in the object form of the table is a token.
func redactTokenPointer(p string) string {
	if p == "" {
		return p
	}
	first, rest, _ := strings.Cut(p[1:], "/")
	first = strings.ReplaceAll(strings.ReplaceAll(first, "~1", "/"), "~0", "~")
	out := "/" + escapeRefToken(redactToken(first))
	if rest != "" {
		out += "/" + rest
	}
	return out
}

func escapeRefToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// checkWeights reports a tenant whose tokens name different weights.
// where[i] names tokens[i].
func checkWeights(tokens []Token, where []string) []schemas.Problem {
	var out []schemas.Problem
	first := map[string]int{} // tenant → index of its first token with a weight
	for i, t := range tokens {
		if t.Weight == 0 {
			continue
		}
		j, ok := first[t.Tenant]
		if !ok {
			first[t.Tenant] = i
			continue
		}
		if tokens[j].Weight != t.Weight {
			out = append(out, schemas.Problem{Pointer: weightPointer(where[i]),
				Message: fmt.Sprintf("tenant %s has weight %d here and %d at %s", t.Tenant, t.Weight, tokens[j].Weight, weightPointer(where[j]))})
		}
	}
	return out
}

// weightPointer is the pointer of a token's weight, from the pointer
// where names the token by ("/0/token", or "/<redacted token>").
func weightPointer(where string) string {
	if p, ok := strings.CutSuffix(where, "/token"); ok {
		return p + "/weight"
	}
	return where + "/weight"
}

// TenantWeights returns the tenants' weights the table names (ParseTokens
// checked that a tenant's tokens agree).
func TenantWeights(tokens []Token) map[string]int {
	var out map[string]int
	for _, t := range tokens {
		if t.Weight > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[t.Tenant] = t.Weight
		}
	}
	return out
}
