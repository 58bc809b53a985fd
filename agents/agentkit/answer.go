package agentkit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentbus/agentbus/schemas"
)

// Answer says how ParseLLM reads a model's answer for one agent.
type Answer struct {
	// Agent names the agent in error messages ("enhance").
	Agent string
	// Schema names the output schema the answer must satisfy.
	Schema string
	// Query is the step's query; it becomes the answer's "query".
	Query string
	// Set overrides fields the agent derives itself, whatever the model
	// said; a nil value removes the field.
	Set map[string]any
}

// ParseLLM decodes a model's answer into out, an agent's output: the
// answer must be one JSON object; its "method" becomes MethodLLM, its
// "query" a.Query, its "fallback_reason" goes, a.Set is applied, and the
// result must satisfy a.Schema (the error then names each bad field's
// JSON pointer). The agent's own sanity checks come after.
func ParseLLM(answer string, a Answer, out any) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(answer), &m); err != nil {
		return fmt.Errorf("%s: answer is not a JSON object: %w", a.Agent, err)
	}
	if m == nil {
		return fmt.Errorf("%s: answer is not a JSON object: null", a.Agent)
	}
	m["method"] = MethodLLM
	m["query"] = a.Query
	delete(m, "fallback_reason")
	for k, v := range a.Set {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	if err := schemas.Validate(a.Schema, b); err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: answer: %w", a.Agent, err)
	}
	return nil
}

// SchemaPrompt is the end of an agent's system prompt: answer with one
// JSON object satisfying the named schema, quoted so that the model and
// the validator agree; filled names the fields the agent fills in itself.
func SchemaPrompt(schema string, filled ...string) string {
	src, _ := schemas.Source(schema)
	list := strings.Join(filled, ", ")
	if n := len(filled); n > 1 {
		list = strings.Join(filled[:n-1], ", ") + " and " + filled[n-1]
	}
	return "Answer with one JSON object (no prose) that satisfies this JSON Schema; " + list +
		" are filled in for you and may be left out:\n" + string(src)
}
