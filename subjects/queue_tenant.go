package subjects

// TenantQueue returns the filter "agentbus.<tenant>.queue.<capability>.*":
// one tenant's queued steps of a capability, at every priority.
func TenantQueue(tenant, capability string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	if err := ValidCapability(capability); err != nil {
		return "", err
	}
	return Root + "." + tenant + ".queue." + capability + ".*", nil
}
