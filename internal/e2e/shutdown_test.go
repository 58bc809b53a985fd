package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// A gateway that shuts down owes every WebSocket client a 1001 close
// ("going away: resume from your last offset"), not a dropped connection:
// clients tell a restart from a failure by it.
func TestWebSocketClientsGetGoingAwayOnGatewayShutdown(t *testing.T) {
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := s.submitSleeps(ctx, "long", 1, 60_000); err != nil {
		t.Fatal(err)
	}
	const clients = 8
	var ready, wg sync.WaitGroup
	ready.Add(clients)
	closes := make([]error, clients)
	for i := range clients {
		c, _, err := websocket.Dial(ctx, "ws://"+s.Addr+"/v1/workflows/long/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer c.CloseNow()
			once := sync.OnceFunc(ready.Done)
			defer once()
			for {
				_, b, err := c.Read(ctx)
				if err != nil {
					closes[i] = err
					return
				}
				var f struct{ Type string }
				if json.Unmarshal(b, &f) == nil && f.Type == "progress" {
					once() // the step is running: the stream is live
				}
			}
		})
	}
	ready.Wait()
	s.stopGateway()
	wg.Wait()
	for i, err := range closes {
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway {
			t.Errorf("client %d ended with %v, want close 1001 going away", i, err)
		}
	}
}
