package orchestrator

import (
	"strings"

	"github.com/agentbus/agentbus/querykind"
)

// Complexity is the heuristic planner's verdict on a query: complex queries
// get the ensemble flow with a detailed report, simple ones the short flow.
type Complexity struct {
	Complex bool
	// Reasons says which rules made the query complex; empty when simple.
	Reasons []string
}

// String is "simple" or "complex (reason; reason)".
func (c Complexity) String() string {
	if !c.Complex {
		return "simple"
	}
	return "complex (" + strings.Join(c.Reasons, "; ") + ")"
}

// LongQueryWords is the threshold of Classify's first rule: a query of at
// least this many words is complex.
const LongQueryWords = querykind.LongQueryWords

// Classify decides, deterministically and without a model, whether a query
// is complex. The rules are querykind.Classify's, which the profile
// selection agent grades queries by too, so that both agree: a query is
// complex when it is long (at least LongQueryWords words), asks for
// analysis ("compare", "vs", "report", "trade-offs", …), asks several
// questions, asks why or how and goes on to a second clause, or has three
// clauses or more; Reasons names every rule that holds.
func Classify(query string) Complexity {
	v := querykind.Classify(query)
	return Complexity{Complex: v.Complex, Reasons: v.Reasons}
}
