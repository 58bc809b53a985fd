package orchestrator

import (
	"encoding/json"
	"testing"

	"github.com/agentbus/agentbus/events"
)

func TestWithSearchOptions(t *testing.T) {
	base := events.Plan{Steps: []events.PlanStep{
		{ID: "entity_extraction", Capability: CapabilityEntityExtraction, Input: queryInput("q", false)},
		{ID: "search", Capability: CapabilitySearch, Input: queryInput("q", true), DependsOn: []string{"entity_extraction"}},
	}}
	for _, tc := range []struct {
		name    string
		meta    map[string]string
		applied bool
		search  string
	}{
		{"none", nil, false, `{"query":"q","ensemble":true}`},
		{"top_k", map[string]string{events.MetadataSearchOptions: `{"k":20}`}, true, `{"ensemble":true,"k":20,"query":"q"}`},
		{"options win", map[string]string{events.MetadataSearchOptions: `{"ensemble":false,"profiles":["bm25"]}`}, true, `{"ensemble":false,"profiles":["bm25"],"query":"q"}`},
		{"not an object", map[string]string{events.MetadataSearchOptions: `[1]`}, false, `{"query":"q","ensemble":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, applied := withSearchOptions(base, tc.meta)
			if applied != tc.applied || string(p.Steps[1].Input) != tc.search {
				t.Errorf("applied %v input %s, want %v %s", applied, p.Steps[1].Input, tc.applied, tc.search)
			}
			if string(p.Steps[0].Input) != string(base.Steps[0].Input) || string(base.Steps[1].Input) != `{"query":"q","ensemble":true}` {
				t.Errorf("other step or the original plan changed: %s %s", p.Steps[0].Input, base.Steps[1].Input)
			}
			var in map[string]any
			if err := json.Unmarshal(p.Steps[1].Input, &in); err != nil {
				t.Fatal(err)
			}
		})
	}
}
