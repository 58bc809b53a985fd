package orchestrator

import (
	"encoding/json"
	"maps"

	"github.com/agentbus/agentbus/events"
)

// withSearchOptions merges the submission's search options
// (events.MetadataSearchOptions: a JSON object of search input fields,
// such as {"k": 20} from an A2A data part) into the input of every search
// step of a plan made for its query; the options win over what the
// planner chose. It reports whether any step took them. Options that are
// not a JSON object are left out: the gateway checks them against the
// search input schema, and the search agent checks its input again.
func withSearchOptions(p events.Plan, metadata map[string]string) (events.Plan, bool) {
	raw := metadata[events.MetadataSearchOptions]
	var opts map[string]json.RawMessage
	if raw == "" || json.Unmarshal([]byte(raw), &opts) != nil || len(opts) == 0 {
		return p, false
	}
	out, applied := p, false
	out.Steps = nil
	for _, s := range p.Steps {
		if s.Capability == CapabilitySearch {
			in := map[string]json.RawMessage{}
			if len(s.Input) > 0 && json.Unmarshal(s.Input, &in) != nil {
				in = map[string]json.RawMessage{}
			}
			maps.Copy(in, opts)
			s.Input, _ = json.Marshal(in)
			applied = true
		}
		out.Steps = append(out.Steps, s)
	}
	if !applied {
		return p, false
	}
	return out, true
}
