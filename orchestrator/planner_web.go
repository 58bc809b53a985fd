package orchestrator

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbus/agentbus/events"
)

// The capabilities of the web knowledge graph, web_search → select →
// ingest (agents/websearch, agents/selectweb, agents/ingest).
const (
	CapabilityWebSearch = "web_search"
	CapabilitySelect    = "select"
	CapabilityIngest    = "ingest"
)

// MetadataAutoIngest is the submission metadata key that lets a planned
// web graph ingest what its select step kept without a human approval:
// {"query": …, "metadata": {"auto_ingest": "true"}}. Any value
// strconv.ParseBool takes as true counts.
const MetadataAutoIngest = "auto_ingest"

// webFlow's capabilities, all needed for it to be planned.
var webNeeds = []string{CapabilityWebSearch, CapabilitySelect, CapabilityIngest}

// webPhrases are what a query says when it wants current or external
// information; each is matched as whole words.
var webPhrases = []string{
	"latest", "newest", "news", "headlines", "today", "todays", "tonight", "yesterday", "current", "currently",
	"recent", "recently", "right now", "this week", "this month", "this year", "last week", "last month",
	"on the web", "on the internet", "online", "web search", "search the web", "search online", "look up online",
	"up to date", "up-to-date",
}

var yearRe = regexp.MustCompile(`\b(19|20|21)\d\d\b`)

// AsksForCurrent reports whether a query asks for current or external
// information, and the words that say so: one of the webPhrases, or a
// year from year (the current one) on. The web graph is planned for such
// a query when its agents are registered.
func AsksForCurrent(query string, year int) (bool, string) {
	words := " " + strings.Join(strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r > 127)
	}), " ") + " "
	for _, p := range webPhrases {
		if strings.Contains(words, " "+p+" ") {
			return true, "“" + p + "”"
		}
	}
	for _, y := range yearRe.FindAllString(query, -1) {
		if n, _ := strconv.Atoi(y); n >= year {
			return true, "the year " + y
		}
	}
	return false, ""
}

// withWeb puts the web graph beside a flow's plan when the query asks for
// current information and web_search, select and ingest are registered:
// web_search → select → ingest, with the flow's answer step (its last)
// also reading select's documents, which it cites by URL. The select step
// requires approval: an approval holds a step's result before its
// dependents run, so a human sees what would be ingested and nothing is
// indexed (or cited) unless they approve; rejecting ends the workflow
// with nothing ingested. MetadataAutoIngest lifts it (autoIngest). The
// ingest step is optional: the answer does not wait for it, and a
// selection with nothing in it (which ingest refuses) or a failed write
// leaves the answer standing, the result marked partial.
func withWeb(p events.Plan, shape, query string, have map[string]bool, year int) (events.Plan, string) {
	if len(missing(webNeeds, have)) > 0 || len(p.Steps) == 0 {
		return p, shape
	}
	current, why := AsksForCurrent(query, year)
	if !current {
		return p, shape
	}
	answer := &p.Steps[len(p.Steps)-1]
	answer.DependsOn = append(slices.Clone(answer.DependsOn), CapabilitySelect)
	ingestIn, _ := json.Marshal(map[string]any{"metadata": map[string]string{"origin": "web"}})
	web := []events.PlanStep{
		{ID: CapabilityWebSearch, Capability: CapabilityWebSearch, Input: queryInput(query, false)},
		{ID: CapabilitySelect, Capability: CapabilitySelect, Input: queryInput(query, false), DependsOn: []string{CapabilityWebSearch}, RequiresApproval: true},
		{ID: CapabilityIngest, Capability: CapabilityIngest, Input: ingestIn, DependsOn: []string{CapabilitySelect}, Optional: true},
	}
	p.Steps = append(web, p.Steps...)
	return p, shape + " beside web_search → select (approval) → ingest, for " + why
}

// autoIngest lifts the approval of the steps an ingest step depends on,
// and of the ingest steps, when the submission's metadata sets
// MetadataAutoIngest: the caller has chosen to let the web graph index
// what select keeps. It applies to planned plans only; a submitted plan
// says what it wants in its own requires_approval fields.
func autoIngest(p events.Plan, metadata map[string]string) (events.Plan, bool) {
	if on, _ := strconv.ParseBool(metadata[MetadataAutoIngest]); !on {
		return p, false
	}
	feeds := map[string]bool{}
	for _, s := range p.Steps {
		if s.Capability == CapabilityIngest {
			feeds[s.ID] = true
			for _, d := range s.DependsOn {
				feeds[d] = true
			}
		}
	}
	changed := false
	steps := slices.Clone(p.Steps)
	for i := range steps {
		if feeds[steps[i].ID] && steps[i].RequiresApproval {
			steps[i].RequiresApproval, changed = false, true
		}
	}
	p.Steps = steps
	return p, changed
}

// yearOf is the current year for the web rule, or year when set.
func yearOf(year int) int {
	if year != 0 {
		return year
	}
	return time.Now().Year()
}
