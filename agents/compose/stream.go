package compose

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Streamer is an LLM that streams its answer as it writes it (an
// *llm.Chat). When Config.LLM is one, the composer asks for plain
// markdown and publishes it as it comes.
type Streamer interface {
	Stream(ctx context.Context, system, user string, delta func(string) error) (string, error)
}

// plainAnswer replaces the JSON answer format of a system prompt: a
// streamed answer is the markdown itself.
const plainAnswer = "Answer with the markdown text only."

// jsonAnswer is the end of the JSON prompts, however the line breaks.
var jsonAnswer = regexp.MustCompile(`Answer with a JSON object:\s*\{"answer": "<markdown text>"\}\.`)

func plain(system string) string { return jsonAnswer.ReplaceAllLiteralString(system, plainAnswer) }

// live publishes a streamed answer as it arrives: the tokens that came
// within one StreamWindow go out as one artifact chunk (every token its
// own chunk with a window shorter than their spacing), so that a client sees the answer being
// written without an event per byte. An answer that opens with "{" is a
// server answering in JSON after all: it is held back and taken whole at
// the end.
type live struct {
	ctx    context.Context
	c      *composition
	window time.Duration
	now    func() time.Time

	decided, held bool
	text          strings.Builder // all of it
	pending       strings.Builder // not yet published
	last          time.Time
	err           error
}

func (l *live) delta(d string) error {
	l.text.WriteString(d)
	if !l.decided {
		t := strings.TrimLeft(l.text.String(), " \t\r\n")
		if t == "" {
			return nil
		}
		l.decided, l.held = true, t[0] == '{'
		if l.held {
			return nil
		}
		d = t
		if m := l.c.memoryLine(); m != "" {
			l.pending.WriteString(m + "\n\n")
		}
	}
	if l.held {
		return nil
	}
	l.pending.WriteString(d)
	if l.now().Sub(l.last) >= l.window {
		return l.flush()
	}
	return nil
}

// flush publishes what is pending as the answer's next chunk.
func (l *live) flush() error {
	if l.pending.Len() == 0 || l.err != nil {
		return l.err
	}
	part := l.pending.String()
	l.pending.Reset()
	l.last = l.now()
	l.c.add(part)
	if err := l.c.emit.Artifact(l.ctx, ArtifactID, l.c.artifactName(), part, l.c.opened, false); err != nil {
		l.err = err
		return err
	}
	l.c.opened, l.c.emitted = true, len(l.c.parts)
	return nil
}

// tryStream asks s for the answer, publishing it as it comes, and then
// checks it like any LLM answer. An answer refused after some of it was
// published is replaced: the fallback's first chunk does not append.
func (a *Agent) tryStream(ctx context.Context, c *composition, s Streamer, system, user string, passages int) (bool, string) {
	l := &live{ctx: ctx, c: c, window: a.cfg.StreamWindow, now: time.Now}
	raw, err := s.Stream(ctx, plain(system), user, l.delta)
	if err == nil {
		err = l.flush()
	}
	var text string
	var cited []int
	if err == nil {
		text, err = parseAnswer(raw)
	}
	if err == nil {
		cited, err = checkCitations(text, passages)
	}
	if err != nil {
		c.parts, c.emitted = nil, 0
		if ctx.Err() != nil {
			c.opened = false
			return false, ctx.Err().Error()
		}
		reason := fmt.Sprintf("LLM %s failed: %v; used the heuristic", a.cfg.LLM.Name(), err)
		if c.opened {
			reason = fmt.Sprintf("LLM %s failed: %v; its streamed answer was replaced by the heuristic's", a.cfg.LLM.Name(), err)
		}
		c.opened = false // the fallback's first chunk replaces what was streamed
		_ = c.emit.Progress(ctx, 10, reason)
		return false, reason
	}
	if l.held {
		c.fromLLM(text, cited)
		return true, ""
	}
	c.setRefs(cited)
	c.add("\n\n")
	c.add(c.limitations())
	if c.report {
		c.add(c.sourcesSection())
	}
	return true, ""
}
