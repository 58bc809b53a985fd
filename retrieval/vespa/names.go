package vespa

import (
	"fmt"
	"strings"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/subjects"
)

// DocType is the schema and document type holding tenant's chunks:
// schema + "_" + the tenant id escaped for Vespa.
//
// Tenant ids are subjects.ValidTenant tokens, [a-z0-9][a-z0-9_-]{0,62};
// Vespa identifiers allow [a-zA-Z0-9_] only. The escape keeps letters and
// digits, writes '_' as "__" and '-' as "_h". It is injective (after '_'
// comes either '_' or 'h', so TenantOf can undo it) and deterministic,
// so two tenants never share a document type:
//
//	default   → chunk_default
//	acme-eu   → chunk_acme_heu
//	acme_eu   → chunk_acme__eu
//
// An invalid tenant is an error wrapping retrieval.ErrInvalidTenant.
func DocType(schema, tenant string) (string, error) {
	if err := subjects.ValidTenant(tenant); err != nil {
		return "", fmt.Errorf("%w: %w", retrieval.ErrInvalidTenant, err)
	}
	var b strings.Builder
	b.Grow(len(schema) + 1 + 2*len(tenant))
	b.WriteString(schema)
	b.WriteByte('_')
	for i := 0; i < len(tenant); i++ {
		switch c := tenant[i]; c {
		case '_':
			b.WriteString("__")
		case '-':
			b.WriteString("_h")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// TenantOf undoes DocType: the tenant whose document type under schema is
// doctype, or an error wrapping retrieval.ErrInvalidTenant when doctype is
// not one DocType makes.
func TenantOf(schema, doctype string) (string, error) {
	rest, ok := strings.CutPrefix(doctype, schema+"_")
	if !ok {
		return "", fmt.Errorf("%w: vespa: document type %q is not %s_<tenant>", retrieval.ErrInvalidTenant, doctype, schema)
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+1 == len(rest) {
			return "", fmt.Errorf("%w: vespa: document type %q ends in a lone '_'", retrieval.ErrInvalidTenant, doctype)
		}
		i++
		switch rest[i] {
		case '_':
			b.WriteByte('_')
		case 'h':
			b.WriteByte('-')
		default:
			return "", fmt.Errorf("%w: vespa: document type %q has an unknown escape _%c", retrieval.ErrInvalidTenant, doctype, rest[i])
		}
	}
	tenant := b.String()
	if err := subjects.ValidTenant(tenant); err != nil {
		return "", fmt.Errorf("%w: %w", retrieval.ErrInvalidTenant, err)
	}
	return tenant, nil
}
