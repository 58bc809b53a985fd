package bus

import (
	"context"
	"fmt"
	"time"
)

// CatchingUp says whether the server this connection is on holds a
// replica of stream that is not current yet (a server restarted on its
// store, replaying what it missed), and how far behind it is; "" when it
// leads the stream, its replica is current, it holds none, or the server
// is not clustered. Only this server's replica counts: a peer that is
// down does not make this server unready.
func (b *Bus) CatchingUp(ctx context.Context, stream string) (string, error) {
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return "", fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	info := s.CachedInfo()
	if info == nil || info.Cluster == nil {
		return "", nil
	}
	me := b.nc.ConnectedServerName()
	if info.Cluster.Leader == "" {
		return "no leader yet", nil
	}
	if info.Cluster.Leader == me {
		return "", nil
	}
	for _, p := range info.Cluster.Replicas {
		if p.Name != me {
			continue
		}
		if !p.Current {
			return fmt.Sprintf("replica on %s not current (%d operations behind, last active %s ago)", me, p.Lag,
				p.Active.Round(time.Millisecond)), nil
		}
		return "", nil
	}
	return "", nil
}
