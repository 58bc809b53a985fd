package mcptool

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errSessionEnded stands for a session that ended without saying why.
var errSessionEnded = errors.New("the session ended")

// supervise keeps a session until ctx ends: it lists the tools again on
// notifications/tools/list_changed and, when the session ends (a stdio
// server that exited), marks the agent down and reconnects with
// backoff. It closes the session last and a.done after.
func (a *Agent) supervise(ctx context.Context, cs *mcp.ClientSession) {
	defer close(a.done)
	delay := a.cfg.RestartMin
	for {
		since := time.Now()
		ended := make(chan error, 1)
		go func() { ended <- cs.Wait() }()
		err := a.serve(ctx, cs, ended)
		if ctx.Err() != nil {
			_ = cs.Close()
			<-ended
			return
		}
		if err == nil {
			err = errSessionEnded
		}
		if time.Since(since) > a.cfg.RestartMax {
			delay = a.cfg.RestartMin
		}
		a.setSession(nil, nil, err)
		a.log.Warn("mcp server session ended; reconnecting", "err", err, "in", delay)
		if cs, delay = a.reconnect(ctx, delay); cs == nil {
			return
		}
	}
}

// serve waits for the session to end (returning why) or ctx to end,
// listing the tools again whenever the server says they changed.
func (a *Agent) serve(ctx context.Context, cs *mcp.ClientSession, ended <-chan error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-ended:
			return err
		case <-a.relist:
			a.refresh(ctx, cs)
		}
	}
}

// refresh lists the tools again and takes the new list.
func (a *Agent) refresh(ctx context.Context, cs *mcp.ClientSession) {
	lctx, cancel := context.WithTimeout(ctx, a.cfg.ConnectTimeout)
	defer cancel()
	listed, err := listTools(lctx, cs)
	if err != nil {
		a.log.Warn("listing the tools again after list_changed", "err", err)
		return
	}
	a.setSession(cs, listed, nil)
}

// reconnect connects again after delay, doubling it (up to RestartMax)
// after each failure, until it succeeds or ctx ends (then nil). It
// returns the delay to use after the next session ends.
func (a *Agent) reconnect(ctx context.Context, delay time.Duration) (*mcp.ClientSession, time.Duration) {
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, delay
		case <-t.C:
		}
		delay = min(2*delay, a.cfg.RestartMax)
		cs, listed, err := a.connect(ctx)
		if err == nil {
			a.setSession(cs, listed, nil)
			a.log.Info("mcp server reconnected")
			return cs, delay
		}
		if ctx.Err() != nil {
			return nil, delay
		}
		a.setSession(nil, nil, err)
		a.log.Warn("mcp server reconnect failed", "err", err, "next_in", delay)
		t.Reset(delay)
	}
}

// setSession records the session and its tools, or that there is none
// and why (down), and logs tools that appeared: serving them needs a
// restart.
func (a *Agent) setSession(cs *mcp.ClientSession, listed []*mcp.Tool, down error) {
	var tools map[string]*tool
	if cs != nil {
		tools = a.table(listed)
		for _, t := range listed {
			if _, ok := a.caps[t.Name]; !ok {
				a.log.Warn("the server offers a tool this worker does not serve; restart the worker to serve it", "tool", t.Name)
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.session, a.down = cs, down
	if cs != nil {
		a.tools = tools
	}
}
