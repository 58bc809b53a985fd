package bus

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentbus/agentbus/subjects"
)

// leaderLastOffset is the sequence of the newest event on subj (a subject
// or a wildcard filter), 0 if none, as the events stream's leader knows
// it. A follower's stall check asks the leader, not any replica: the
// events stream allows direct gets, which any replica answers — and a
// replica catching up after its server restarted answers with what it
// has, the same stale view a consumer placed on it delivers from, so
// the stall it should reveal would look like a follower caught up.
func (b *Bus) leaderLastOffset(ctx context.Context, subj string) (uint64, error) {
	req, _ := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{subj})
	resp, err := b.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+subjects.StreamEvents, req)
	if err != nil {
		return 0, fmt.Errorf("bus: last event of %s: %w", subj, err)
	}
	var out struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		return 0, fmt.Errorf("bus: last event of %s: %w", subj, err)
	}
	switch {
	case out.Error != nil && out.Error.Code == 404:
		return 0, nil // no message on subj
	case out.Error != nil:
		return 0, fmt.Errorf("bus: last event of %s: %s (%d)", subj, out.Error.Description, out.Error.ErrCode)
	case out.Message == nil:
		return 0, fmt.Errorf("bus: last event of %s: empty answer", subj)
	}
	return out.Message.Seq, nil
}
