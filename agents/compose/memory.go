package compose

import (
	"slices"
	"strings"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
)

// maxFacts bounds how many remembered facts an answer mentions.
const maxFacts = 3

// fact is the part of a memory fact read here.
type fact struct {
	Key string `json:"key"`
	// You is the fact in the second person: "you work with Go".
	You      string `json:"you"`
	Sentence string `json:"sentence"`
}

// memoryOutput is the part of the memory step's output read here.
type memoryOutput struct {
	Recalled []fact `json:"recalled"`
	Stored   []fact `json:"stored"`
}

// remembered returns what the memory step recalled as relevant (and what
// it has just stored), in the second person, recalled first, at most
// maxFacts of them.
func remembered(req agents.Request) []string {
	var m memoryOutput
	if !agentkit.Dependency(req, "memory", &m) {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range slices.Concat(m.Recalled, m.Stored) {
		text := strings.TrimSpace(strings.TrimRight(f.You, ". "))
		if text == "" && strings.TrimSpace(f.Sentence) != "" {
			text = "“" + strings.TrimRight(strings.TrimSpace(f.Sentence), ".!? ") + "”"
		}
		id := strings.ToLower(text)
		if text == "" || seen[id] || (f.Key != "" && seen[f.Key]) {
			continue
		}
		seen[id], seen[f.Key] = true, true
		out = append(out, text)
		if len(out) == maxFacts {
			break
		}
	}
	return out
}
