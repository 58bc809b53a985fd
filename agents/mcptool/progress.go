package mcptool

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/agents"
)

// progress routes the server's progress notifications to the running
// steps' emitters, by the progress token each call carries. Safe for
// concurrent use; the zero value is ready.
type progress struct {
	next  atomic.Uint64
	mu    sync.Mutex
	steps map[string]stepProgress
}

type stepProgress struct {
	ctx  context.Context
	emit agents.Emitter
}

// track gives a call of the step a token of its own; done forgets it
// (a notification that arrives later is dropped).
func (p *progress) track(ctx context.Context, emit agents.Emitter) (token string, done func()) {
	token = fmt.Sprintf("agentbus-%d", p.next.Add(1))
	p.mu.Lock()
	if p.steps == nil {
		p.steps = map[string]stepProgress{}
	}
	p.steps[token] = stepProgress{ctx, emit}
	p.mu.Unlock()
	return token, func() {
		p.mu.Lock()
		delete(p.steps, token)
		p.mu.Unlock()
	}
}

// notify is the client's progress handler: it publishes the notification
// as the step's progress event, in percent of the total when the server
// gives one (else 0, with the message).
func (p *progress) notify(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req.Params == nil {
		return
	}
	p.mu.Lock()
	s, ok := p.steps[fmt.Sprint(req.Params.ProgressToken)]
	p.mu.Unlock()
	if !ok {
		return
	}
	pct := 0.0
	if req.Params.Total > 0 {
		pct = min(max(100*req.Params.Progress/req.Params.Total, 0), 100)
	}
	_ = s.emit.Progress(s.ctx, pct, req.Params.Message)
}
