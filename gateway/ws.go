package gateway

// WSConfig configures the WebSocket endpoint. The zero value means defaults.
type WSConfig struct{}

func (c *WSConfig) setDefaults() {}

// Validate reports every problem with the configuration.
func (c WSConfig) Validate() error { return nil }

func (g *Gateway) routesWS() {}
