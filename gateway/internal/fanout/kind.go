package fanout

// Stream kinds, the "kind" label of the gateway's stream metrics, which a
// queue's slow close is counted under.
const (
	KindSSE = "sse"
	KindWS  = "ws"
	// KindA2A counts A2A streams' slow closes (their connections and
	// frames are counted as sse).
	KindA2A = "a2a"
)
