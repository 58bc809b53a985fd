package a2aagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentbus/agentbus/agents"
)

// skill is one skill of a remote agent served as a capability.
type skill struct {
	r          *Remote
	capability string
	skill      a2a.AgentSkill
	agentName  string
	version    string
}

var (
	_ agents.Agent         = (*skill)(nil)
	_ agents.HealthChecker = (*skill)(nil)
)

// Card describes the skill: its own description and examples (what
// discovery embeds and planners read), named after its capability.
func (s *skill) Card() agents.Card {
	desc := s.skill.Description
	if desc == "" {
		desc = s.skill.Name
	}
	desc = strings.TrimSpace(desc) + fmt.Sprintf(" (skill %q of the remote A2A agent %q)", s.skill.ID, s.agentName)
	return agents.Card{Name: s.capability, Description: desc, Version: s.version,
		Capabilities: []string{s.capability}, Examples: slices.Clone(s.skill.Examples)}
}

// Health reports whether the remote agent's card answers, fetching it
// when it is due.
func (s *skill) Health(ctx context.Context) error { return s.r.check(ctx) }

// Handle runs the step as a task of the remote agent.
func (s *skill) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	r := s.r
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CardTimeout)
	err := r.check(cctx)
	cancel()
	if err != nil {
		return nil, err
	}
	card, client := r.current()
	if !slices.ContainsFunc(card.Skills, func(k a2a.AgentSkill) bool { return k.ID == s.skill.ID }) {
		return nil, fmt.Errorf("%w: a2aagent: the remote agent %q no longer offers skill %q", agents.ErrPermanent, card.Name, s.skill.ID)
	}
	callCtx, release := r.track(ctx)
	defer release()
	c := &call{r: r, s: s, client: client, emit: emit, req: req, streaming: card.Capabilities.Streaming}
	out, err := c.run(callCtx)
	if err == nil {
		return out, nil
	}
	if cause := context.Cause(callCtx); errors.Is(cause, ErrUnavailable) && ctx.Err() == nil {
		return nil, cause
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) && ctx.Err() == nil {
		r.stale()
		return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, s.agentName, err)
	}
	return nil, err
}
