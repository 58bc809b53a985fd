package search

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/querykind"
)

// Capabilities of the planning steps whose outputs the agent reads.
const (
	depProfiles = "profile_selection"
	depEntities = "entity_extraction"
	depEnhance  = "query_enhancement"
)

// maxVariants bounds how many query variants join an ensemble, so that a
// chatty query_enhancement step cannot multiply the searches unboundedly.
const maxVariants = 4

// profileSelection is the part of profile_selection's output read here.
// agents/profiles names its choices "selected"; "profiles" is accepted
// too, and read when "selected" is empty.
type profileSelection struct {
	Selected []selected `json:"selected"`
	Profiles []selected `json:"profiles"`
	Ensemble *bool      `json:"ensemble"`
}

func (s profileSelection) choices() []selected {
	if len(s.Selected) > 0 {
		return s.Selected
	}
	return s.Profiles
}

// selected is one profile profile_selection chose.
type selected struct {
	Name       string  `json:"name"`
	Confidence float64 `json:"confidence"`
}

// entities is the part of entity_extraction's output read here. Bounds are
// strings so that one the agent cannot parse is ignored, not fatal.
type entities struct {
	Filters struct {
		From     string            `json:"from"`
		To       string            `json:"to"`
		Metadata map[string]string `json:"metadata"`
	} `json:"filters"`
}

// enhancement is the part of query_enhancement's output read here.
type enhancement struct {
	Variants []string `json:"variants"`
}

// plan is what one search step will do.
type plan struct {
	query    string
	u        querykind.Understanding
	variants []string
	profiles []string
	ensemble bool
	k        int
	filters  *Filters
}

// list is one ranked list to fetch: a profile searched with one query.
type list struct {
	name, profile, query string
	side                 int // n for the n-th side of a comparison, 0 otherwise
}

// plan merges the step input with its dependencies' outputs; the input
// wins where both speak.
func (a *Agent) plan(req agents.Request, in Input) plan {
	p := plan{query: agentkit.QueryOf(req, in.Query), k: cmp.Or(in.K, a.cfg.K)}
	p.u = querykind.Understand(p.query)
	var sel profileSelection
	haveSel := agentkit.Dependency(req, depProfiles, &sel)
	switch {
	case in.Ensemble != nil:
		p.ensemble = *in.Ensemble
	case haveSel && sel.Ensemble != nil:
		p.ensemble = *sel.Ensemble
	}
	p.profiles = a.profiles(in.Profiles, sel, p.ensemble)

	p.filters = in.Filters
	var ent entities
	if p.filters == nil && agentkit.Dependency(req, depEntities, &ent) {
		f := &Filters{Metadata: ent.Filters.Metadata}
		if t, err := time.Parse(time.RFC3339, ent.Filters.From); err == nil {
			f.From = &t
		}
		if t, err := time.Parse(time.RFC3339, ent.Filters.To); err == nil {
			f.To = &t
		}
		p.filters = f
	}
	var enh enhancement
	if agentkit.Dependency(req, depEnhance, &enh) {
		seen := map[string]bool{strings.ToLower(p.query): true, strings.ToLower(p.u.Search): true}
		for _, v := range enh.Variants {
			v = strings.TrimSpace(v)
			if v == "" || seen[strings.ToLower(v)] || len(p.variants) == maxVariants {
				continue
			}
			seen[strings.ToLower(v)] = true
			p.variants = append(p.variants, v)
		}
	}
	return p
}

// profiles picks the profiles to search: the input's, else the
// profile_selection step's that the backend knows (best first), else the
// configured defaults. Without an ensemble only the first is kept; an
// ensemble of one selected profile widens to the defaults.
func (a *Agent) profiles(explicit []string, sel profileSelection, ensemble bool) []string {
	var out []string
	switch {
	case len(explicit) > 0:
		out = dedupe(explicit)
	default:
		known := a.cfg.Backend.Profiles()
		picked := slices.Clone(sel.choices())
		slices.SortStableFunc(picked, func(x, y selected) int { return cmp.Compare(y.Confidence, x.Confidence) })
		for _, s := range picked {
			if slices.Contains(known, s.Name) && !slices.Contains(out, s.Name) {
				out = append(out, s.Name)
			}
		}
		if len(out) == 0 || (ensemble && len(out) == 1) {
			out = dedupe(a.cfg.DefaultProfiles)
		}
	}
	if !ensemble {
		out = out[:1]
	}
	return out
}

func dedupe(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// lists is every (profile × query) pair: "<profile>" for the query's
// search text (querykind.Understanding.Search), "<profile>:v<n>" for the
// n-th variant and "<profile>:side<n>" for the n-th side of a comparison.
func (p plan) lists() []list {
	out := make([]list, 0, len(p.profiles)*(1+len(p.variants)+len(p.u.Sides)))
	for _, prof := range p.profiles {
		out = append(out, list{name: prof, profile: prof, query: p.u.Search})
		for i, v := range p.variants {
			out = append(out, list{name: prof + ":v" + strconv.Itoa(i+1), profile: prof, query: v})
		}
		for i, s := range p.u.Sides {
			out = append(out, list{name: sideList(prof, i), profile: prof, query: s, side: i + 1})
		}
	}
	return out
}

// sideList names the list of profile for the i-th side (from 0).
func sideList(profile string, i int) string { return profile + ":side" + strconv.Itoa(i+1) }

func (p plan) filtersEmpty() bool {
	return p.filters == nil || (p.filters.From == nil && p.filters.To == nil && len(p.filters.Metadata) == 0)
}
