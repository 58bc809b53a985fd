package subjects

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// BucketLimits holds flow control's counters that every orchestrator
// shares (#23): the token buckets of tenants' LLM token limits, one key
// per tenant and model (TokenBucketKey), written with compare-and-set.
const BucketLimits = "AGENTBUS_LIMITS"

// TokenBucketKey returns the BucketLimits key of a tenant's token bucket
// for a model: "tokens.<tenant>.<hex SHA-256 of model, 32 digits>". The
// model is hashed because its name may hold characters a KV key may not
// ("meta-llama/Llama-3.1-8B").
func TokenBucketKey(tenant, model string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	if model == "" {
		return "", fmt.Errorf("%w: empty model name", ErrInvalidToken)
	}
	sum := sha256.Sum256([]byte(model))
	return "tokens." + tenant + "." + hex.EncodeToString(sum[:16]), nil
}
