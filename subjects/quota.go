package subjects

// Filters that count one tenant's stored messages of a kind (the gateway's
// quotas, #23): a stream's info with a subject filter gives them without
// reading a message.

// TenantSteps returns "agentbus.<tenant>.step.*": the tenant's step
// requests in StreamSteps, of every capability.
func TenantSteps(tenant string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	return Root + "." + tenant + ".step.*", nil
}

// TenantQueued returns "agentbus.<tenant>.queue.*.*": the tenant's steps
// waiting for admission in StreamQueue, of every capability and priority.
func TenantQueued(tenant string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	return Root + "." + tenant + ".queue.*.*", nil
}
