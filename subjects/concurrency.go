package subjects

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// BucketConcurrency holds the state of submissions' concurrency keys
// (#23): one key per tenant and concurrency key (ConcurrencyKey), holding
// the limit and the workflows that run and wait under it, written with
// compare-and-set by orchestrators.
const BucketConcurrency = "AGENTBUS_CONCURRENCY"

// ConcurrencyKey returns the BucketConcurrency key of a submission's
// concurrency key: "<tenant>.<hex SHA-256 of key>". The key is hashed
// because it may hold characters a KV key may not; the tenant prefix
// keeps tenants' keys apart.
func ConcurrencyKey(tenant, key string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	if key == "" {
		return "", fmt.Errorf("%w: empty concurrency key", ErrInvalidToken)
	}
	sum := sha256.Sum256([]byte(key))
	return tenant + "." + hex.EncodeToString(sum[:]), nil
}
