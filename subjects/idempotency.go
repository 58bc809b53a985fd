package subjects

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// BucketIdempotency records the idempotency keys of submissions (#23):
// one key per tenant and client key (IdempotencyKey), holding the
// workflow the key started and a hash of its request, dropped by the
// bucket's TTL a day after it was written.
const BucketIdempotency = "AGENTBUS_IDEMPOTENCY"

// IdempotencyKey returns the BucketIdempotency key of a client's
// idempotency key: "<tenant>.<hex SHA-256 of key>". The key is hashed
// because a client's key may hold characters a KV key may not, and be
// long; the tenant prefix keeps tenants' keys apart.
func IdempotencyKey(tenant, key string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	if key == "" {
		return "", fmt.Errorf("%w: empty idempotency key", ErrInvalidToken)
	}
	sum := sha256.Sum256([]byte(key))
	return tenant + "." + hex.EncodeToString(sum[:]), nil
}
