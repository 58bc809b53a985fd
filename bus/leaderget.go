package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errNoMsg is leaderGet's answer for a subject with no message.
var errNoMsg = errors.New("bus: no message")

// leaderMsg is a message as a stream's leader answers
// $JS.API.STREAM.MSG.GET.
type leaderMsg struct {
	Subject string
	Seq     uint64
	Header  nats.Header
	Data    []byte
}

// leaderGet reads a message of stream through its leader, never a direct
// get: a replica that restarted answers direct gets with what it held
// until it has caught up, so a "no message" from one is not to be
// believed when it matters. req is the request's body
// ({"last_by_subj": …} or {"seq": 1, "next_by_subj": …}); errNoMsg when
// there is none.
func leaderGet(ctx context.Context, nc *nats.Conn, stream string, req map[string]any) (leaderMsg, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	body, _ := json.Marshal(req)
	m, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
	if err != nil {
		return leaderMsg{}, fmt.Errorf("bus: %s through its leader: %w", stream, err)
	}
	var resp struct {
		Message *struct {
			Subject string `json:"subject"`
			Seq     uint64 `json:"seq"`
			Hdrs    []byte `json:"hdrs"`
			Data    []byte `json:"data"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return leaderMsg{}, fmt.Errorf("bus: %s through its leader: %w", stream, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return leaderMsg{}, errNoMsg
	case resp.Error != nil:
		return leaderMsg{}, fmt.Errorf("bus: %s through its leader: %w", stream, resp.Error)
	case resp.Message == nil:
		return leaderMsg{}, fmt.Errorf("bus: %s through its leader: empty answer %q", stream, m.Data)
	}
	out := leaderMsg{Subject: resp.Message.Subject, Seq: resp.Message.Seq, Data: resp.Message.Data}
	if len(resp.Message.Hdrs) > 0 {
		if h, err := nats.DecodeHeadersMsg(resp.Message.Hdrs); err == nil {
			out.Header = h
		}
	}
	return out, nil
}
