package orchestrator

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// A step's output under the workers' payload threshold travels inline,
// and the orchestrator copies it: into the task, the result, the step's
// completed status (its artifact), the next steps' requests and the
// complete event, all of which wait in the checkpoint's outbox until
// published. A few outputs of a couple of hundred KiB can so make a
// checkpoint larger than a message. Before such a checkpoint is stored,
// its largest inline outputs are stored as payloads (bus.PutPayload) and
// every copy of each is replaced by its reference — the same reference a
// worker would have sent. A checkpoint that fits costs one length
// comparison.

// spillMin is the smallest output fit moves out of a checkpoint: a
// smaller one is not worth a round trip, and is too short to be
// replaced by its bytes without risk of matching something else.
const spillMin = 4 << 10

// fit returns data, cp's encoding, when it is at most o.fitLimit bytes;
// else it offloads cp's inline outputs, largest first, until it fits, and
// returns cp's new encoding.
func (o *Orchestrator) fit(ctx context.Context, cp *workflow.Checkpoint, data []byte) ([]byte, error) {
	if int64(len(data)) <= o.fitLimit {
		return data, nil
	}
	type big struct {
		id   string
		size int
	}
	var bigs []big
	for id, t := range cp.Tasks {
		if len(t.Output) >= spillMin {
			if _, isRef, _ := events.ParseRef(t.Output); !isRef {
				bigs = append(bigs, big{id, len(t.Output)})
			}
		}
	}
	slices.SortFunc(bigs, func(a, b big) int { return cmp.Compare(b.size, a.size) })
	size := int64(len(data))
	for _, b := range bigs {
		if size <= o.fitLimit {
			break
		}
		t := cp.Tasks[b.id]
		base := events.StepKey(cp.TenantID, cp.WorkflowID, b.id, t.Attempt)
		ref, err := o.cfg.Bus.PutPayload(ctx, base, "output", bus.ContentTypeJSON, t.Output)
		if err != nil {
			return nil, fmt.Errorf("orchestrator: offload the output of %s: %w", b.id, err)
		}
		replace(cp, t.Output, ref.JSON())
		t.Output = ref.JSON()
		o.log.Info("step output moved to the payloads store to keep the checkpoint under the message limit",
			"workflow", cp.WorkflowID, "step", b.id, "bytes", b.size, "key", ref.Key)
		if data, err = o.store(cp); err != nil {
			return nil, err
		}
		size = int64(len(data))
	}
	return data, nil
}

// replace puts ref in place of every copy of output in cp's result and
// outbox (encoded compactly there, whatever the agent sent).
func replace(cp *workflow.Checkpoint, output, ref []byte) {
	var compact bytes.Buffer
	if json.Compact(&compact, output) == nil {
		output = compact.Bytes()
	}
	cp.Result = bytes.ReplaceAll(cp.Result, output, ref)
	for i := range cp.Outbox {
		cp.Outbox[i].Data = bytes.ReplaceAll(cp.Outbox[i].Data, output, ref)
	}
}
