package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/schemas"
)

// ErrToolFailed is wrapped by the error of a step whose tool answered
// isError; it also wraps agents.ErrPermanent.
var ErrToolFailed = errors.New("mcptool: tool failed")

// ErrUnavailable is wrapped by the error of a step that found no session:
// the server is being reconnected, and the step is retried.
var ErrUnavailable = errors.New("mcptool: server not connected")

// Handle calls the step's tool with the step's input as its arguments.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	if !a.serves(req.Capability) {
		return nil, fmt.Errorf("%w: mcptool: server %s serves no capability %q", agents.ErrPermanent, a.cfg.Server.Name, req.Capability)
	}
	a.mu.RLock()
	cs, t, down := a.session, a.tools[req.Capability], a.down
	a.mu.RUnlock()
	if cs == nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, a.cfg.Server.Name, down)
	}
	if t == nil {
		return nil, fmt.Errorf("%w: mcptool: server %s no longer offers the tool of %s", agents.ErrPermanent, a.cfg.Server.Name, req.Capability)
	}
	args, err := a.arguments(t, req.Input)
	if err != nil {
		return nil, err
	}
	params := &mcp.CallToolParams{Name: t.name, Arguments: args}
	token, done := a.progress.track(ctx, emit)
	defer done()
	params.SetProgressToken(token)
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			// The server answered: no retry will make it answer otherwise.
			return nil, fmt.Errorf("%w: mcptool: tool %s of server %s: %w", agents.ErrPermanent, t.name, a.cfg.Server.Name, err)
		}
		return nil, fmt.Errorf("mcptool: tool %s of server %s: %w", t.name, a.cfg.Server.Name, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("%w: %w: %s of server %s: %s", agents.ErrPermanent, ErrToolFailed, t.name, a.cfg.Server.Name, texts(res.Content))
	}
	if err := artifacts(ctx, emit, res.Content); err != nil {
		return nil, err
	}
	return output(res)
}

// serves reports whether capability is one of the agent's (fixed at start).
func (a *Agent) serves(capability string) bool {
	_, ok := slices.BinarySearch(a.card.Capabilities, capability)
	return ok
}

// arguments checks a step's input against the tool's input schema: none
// means {}, and anything but an object is refused (MCP arguments are an
// object). A refusal names the JSON pointer and is permanent.
func (a *Agent) arguments(t *tool, input json.RawMessage) (json.RawMessage, error) {
	in := bytes.TrimSpace(input)
	if len(in) == 0 || string(in) == "null" {
		in = []byte("{}")
	}
	if in[0] != '{' {
		return nil, fmt.Errorf("%w: mcptool: input of tool %s: /: the arguments must be a JSON object", agents.ErrPermanent, t.name)
	}
	if t.schema == nil {
		return in, nil
	}
	if err := t.schema.Validate(in); err != nil {
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		parts := make([]string, len(ve.Problems))
		for i, p := range ve.Problems {
			ptr := p.Pointer
			if ptr == "" {
				ptr = "/"
			}
			parts[i] = ptr + ": " + p.Message
		}
		return nil, fmt.Errorf("%w: mcptool: input of tool %s does not fit its input schema: %s", agents.ErrPermanent, t.name, strings.Join(parts, "; "))
	}
	return in, nil
}

// output is the step's output: structuredContent when the tool gave it,
// else the content list.
func output(res *mcp.CallToolResult) (json.RawMessage, error) {
	var v any = res.Content
	if res.StructuredContent != nil {
		v = res.StructuredContent
	} else if res.Content == nil {
		v = []mcp.Content{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: mcptool: the tool's result: %w", agents.ErrPermanent, err)
	}
	return b, nil
}

// artifacts publishes each content item as an artifact of its own,
// content-<i>, named by its kind (and a resource's URI).
func artifacts(ctx context.Context, emit agents.Emitter, content []mcp.Content) error {
	for i, c := range content {
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("%w: mcptool: content %d: %w", agents.ErrPermanent, i, err)
		}
		if err := emit.Artifact(ctx, fmt.Sprintf("content-%d", i), contentName(c), json.RawMessage(b), false, true); err != nil {
			return err
		}
	}
	return nil
}

func contentName(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return "text"
	case *mcp.ImageContent:
		return "image " + c.MIMEType
	case *mcp.AudioContent:
		return "audio " + c.MIMEType
	case *mcp.ResourceLink:
		return "resource link " + c.URI
	case *mcp.EmbeddedResource:
		if c.Resource != nil {
			return "resource " + c.Resource.URI
		}
		return "resource"
	}
	return "content"
}

// texts joins a result's text items: what an isError result says.
func texts(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "(no text)"
	}
	return strings.Join(parts, " ")
}
