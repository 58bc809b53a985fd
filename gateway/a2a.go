package gateway

// A2AConfig configures the A2A surface. The zero value means defaults.
type A2AConfig struct{}

func (c *A2AConfig) setDefaults() {}

// Validate reports every problem with the configuration.
func (c A2AConfig) Validate() error { return nil }

func (g *Gateway) routesA2A() {}
