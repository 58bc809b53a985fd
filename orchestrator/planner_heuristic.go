package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
)

// The built-in capabilities the heuristic planner's flows are made of.
const (
	CapabilityEntityExtraction = "entity_extraction"
	CapabilityProfileSelection = "profile_selection"
	CapabilityQueryEnhancement = "query_enhancement"
	CapabilitySearch           = "search"
	CapabilitySummarize        = "summarize"
	CapabilityDetailedReport   = "detailed_report"
	// CapabilityMemory joins either flow when registered: it runs beside
	// the first steps (optional: a failing memory never fails the
	// workflow) and the answer step reads what it recalled.
	CapabilityMemory = "memory"
)

// flow is one of the seed system's fixed plans for a query.
type flow struct {
	name  string
	needs []string
	// shape describes the plan for people, e.g. "a → b → c".
	shape string
	build func(query string) events.Plan
}

// simpleFlow: entity_extraction → search → summarize.
var simpleFlow = flow{
	name:  "simple flow",
	needs: []string{CapabilityEntityExtraction, CapabilitySearch, CapabilitySummarize},
	shape: "entity_extraction → search → summarize",
	build: func(q string) events.Plan {
		return events.Plan{Steps: []events.PlanStep{
			planning(CapabilityEntityExtraction, q),
			{ID: CapabilitySearch, Capability: CapabilitySearch, Input: queryInput(q, false), DependsOn: []string{CapabilityEntityExtraction}},
			{ID: CapabilitySummarize, Capability: CapabilitySummarize, Input: queryInput(q, false), DependsOn: []string{CapabilitySearch}},
		}}
	},
}

// complexFlow: [profile_selection ∥ entity_extraction ∥ query_enhancement]
// → search (ensemble) → detailed_report.
var complexFlow = flow{
	name: "complex flow",
	needs: []string{CapabilityProfileSelection, CapabilityEntityExtraction, CapabilityQueryEnhancement,
		CapabilitySearch, CapabilityDetailedReport},
	shape: "[profile_selection ∥ entity_extraction ∥ query_enhancement] → search (ensemble) → detailed_report",
	build: func(q string) events.Plan {
		first := []string{CapabilityProfileSelection, CapabilityEntityExtraction, CapabilityQueryEnhancement}
		return events.Plan{Steps: []events.PlanStep{
			planning(CapabilityProfileSelection, q),
			planning(CapabilityEntityExtraction, q),
			planning(CapabilityQueryEnhancement, q),
			{ID: CapabilitySearch, Capability: CapabilitySearch, Input: queryInput(q, true), DependsOn: first},
			{ID: CapabilityDetailedReport, Capability: CapabilityDetailedReport, Input: queryInput(q, false), DependsOn: []string{CapabilitySearch}},
		}}
	},
}

// planning is a flow's planning step (profile selection, entity
// extraction, query enhancement). It is optional: if it fails after its
// retries, search runs with what the others gave (its configured profiles,
// no filters, the query alone), and the answer, which hears of the
// failure, says what was missing.
func planning(capability, query string) events.PlanStep {
	return events.PlanStep{ID: capability, Capability: capability, Input: queryInput(query, false), Optional: true}
}

// withMemory adds an optional memory step to a flow's plan when the
// capability is registered: it starts with the first steps and the last
// step (the answer) depends on it.
func withMemory(p events.Plan, shape, query string, have map[string]bool) (events.Plan, string) {
	if !have[CapabilityMemory] || len(p.Steps) == 0 {
		return p, shape
	}
	last := &p.Steps[len(p.Steps)-1]
	last.DependsOn = append(slices.Clone(last.DependsOn), CapabilityMemory)
	p.Steps = append(p.Steps, events.PlanStep{ID: CapabilityMemory, Capability: CapabilityMemory,
		Input: queryInput(query, false), Optional: true})
	return p, shape + " (with memory)"
}

// inFlow reports whether a capability is part of a built-in flow (the web
// graph's web_search and select included: "search the web" asks for the
// web graph, not a lone web_search step).
func inFlow(c string) bool {
	return slices.Contains(simpleFlow.needs, c) || slices.Contains(complexFlow.needs, c) ||
		c == CapabilityWebSearch || c == CapabilitySelect
}

// alone reports whether a capability may be a plan's only step: select
// cannot (it selects among a web search's results), and "select" is too
// common a word to route by.
func alone(c string) bool { return c != CapabilitySelect }

// HeuristicPlanner is the default planner. It needs no model, and for one
// query and one set of agents it always makes the same plan:
//
//  1. a query that names a registered capability outside the built-in flows
//     ("echo hello") gets one step on it: naming one is asking for it;
//  2. otherwise Classify decides between the complex flow,
//     [profile_selection ∥ entity_extraction ∥ query_enhancement] →
//     search (ensemble) → detailed_report, and the simple flow,
//     entity_extraction → search → summarize; a complex query whose flow
//     is not all registered gets the simple flow if that is;
//  3. with neither flow registered: one step on a capability the query
//     names, else on the best agent by semantic discovery if its
//     similarity reaches MinScore, else on echo.
//
// Either flow gets the web graph beside it, web_search → select (which
// requires approval) → ingest, with the answer step also reading select's
// documents, when the query asks for current or external information
// (AsksForCurrent) and web_search, select and ingest are all registered
// (they are only when a web search provider is configured).
//
// The planning steps (profile_selection, entity_extraction,
// query_enhancement) are optional: one that fails after its retries leaves
// search to run with what it has, and the answer says what was missing.
//
// Every step's input is {"query": …}; the complex flow's search step's is
// {"query": …, "ensemble": true}. A HeuristicPlanner is safe for concurrent
// use; its zero value is ready to use. Its plans depend on nothing but the
// query and the agents, and the year (see Year).
type HeuristicPlanner struct {
	// MinScore is the similarity below which semantic discovery does not
	// route; default 0.05 (the orchestrator passes its Config.MinScore).
	MinScore float64
	// Embedder names the embedder that ranked the agents, for explanations.
	Embedder string
	// Year is the current year for AsksForCurrent ("… in 2026"); zero
	// means the clock's.
	Year int
}

// build makes a flow's plan with the web graph and memory steps that
// join it.
func (h HeuristicPlanner) build(f flow, query string, have map[string]bool) (events.Plan, string) {
	p, shape := withWeb(f.build(query), f.shape, query, have, yearOf(h.Year))
	return withMemory(p, shape, query, have)
}

// Plan plans query among agents (see HeuristicPlanner). It never fails.
func (h HeuristicPlanner) Plan(_ context.Context, query string, agents []discovery.Match) (events.Plan, string, error) {
	if c, ok := namedCapability(query, agents, inFlow); ok {
		return PlanQuery(query, c), fmt.Sprintf("heuristic planner: routed to %s: the query names it", c), nil
	}
	have := capabilities(agents)
	verdict := Classify(query)
	prefix := "heuristic planner: simple query"
	if verdict.Complex {
		prefix = "heuristic planner: complex query (" + strings.Join(verdict.Reasons, "; ") + ")"
	}
	var lacking []string
	if verdict.Complex {
		if lacking = missing(complexFlow.needs, have); len(lacking) == 0 {
			p, shape := h.build(complexFlow, query, have)
			return p, prefix + ": " + shape, nil
		}
		if len(missing(simpleFlow.needs, have)) == 0 {
			p, shape := h.build(simpleFlow, query, have)
			return p, fmt.Sprintf("%s, but the complex flow lacks %s: %s", prefix, joinComma(lacking), shape), nil
		}
	} else if lacking = missing(simpleFlow.needs, have); len(lacking) == 0 {
		p, shape := h.build(simpleFlow, query, have)
		return p, prefix + ": " + shape, nil
	}
	c, why := h.route(query, agents)
	return PlanQuery(query, c), fmt.Sprintf("heuristic planner: no flow (%s not registered); %s", joinComma(lacking), why), nil
}

// route picks one capability for a query no flow serves, and says why.
func (h HeuristicPlanner) route(query string, agents []discovery.Match) (string, string) {
	if c, ok := namedCapability(query, agents, func(c string) bool { return !alone(c) }); ok {
		return c, fmt.Sprintf("routed to %s: the query names it", c)
	}
	floor := h.MinScore
	if floor == 0 {
		floor = 0.05
	}
	// agents arrive ranked (similarity, then health and load among close
	// scores), so one below the floor may precede one above it: the first
	// with a capability and a similarity at the floor decides.
	for _, m := range agents {
		if len(m.Capabilities) == 0 || m.Score < floor {
			continue
		}
		by := ""
		if h.Embedder != "" {
			by = ", embedder " + h.Embedder
		}
		return m.Capabilities[0], fmt.Sprintf("routed to %s by semantic discovery (agent %s, similarity %.2f%s)",
			m.Capabilities[0], m.Name, m.Score, by)
	}
	if len(agents) == 0 {
		return EchoCapability, "routed to echo: no agent is registered"
	}
	return EchoCapability, "routed to echo: no agent matches the query"
}

// describePlan is a short account of a plan's shape for explanations:
// "4 steps: a → b, a → c, d" (edges, and steps joined to none).
func describePlan(p events.Plan) string {
	used := map[string]bool{}
	for _, s := range p.Steps {
		for _, d := range s.DependsOn {
			used[d], used[s.ID] = true, true
		}
	}
	var parts []string
	for _, s := range p.Steps {
		if !used[s.ID] {
			parts = append(parts, s.ID)
		}
		for _, d := range s.DependsOn {
			parts = append(parts, d+" → "+s.ID)
		}
	}
	if len(parts) > 12 {
		parts = append(parts[:12], "…")
	}
	n := fmt.Sprintf("%d steps", len(p.Steps))
	if len(p.Steps) == 1 {
		n = "1 step"
	}
	return n + ": " + strings.Join(parts, ", ")
}
