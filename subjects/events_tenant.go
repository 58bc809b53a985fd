package subjects

// TenantEvents returns the filter "agentbus.<tenant>.events.*": every
// workflow's event subject of one tenant, for a tenant-wide feed.
func TenantEvents(tenant string) (string, error) {
	if err := ValidTenant(tenant); err != nil {
		return "", err
	}
	return Root + "." + tenant + ".events.*", nil
}
