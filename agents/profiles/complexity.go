package profiles

import "github.com/agentbus/agentbus/querykind"

// complexity grades a query by the rules the orchestrator's heuristic
// planner uses too (querykind.Classify): complex when any rule holds
// (long, analytic, several questions, why/how with a second clause, three
// clauses). The score, rounded to hundredths, is at least 0.5 exactly
// when the query is complex.
func complexity(query string) Complexity {
	v := querykind.Classify(query)
	c := Complexity{Level: LevelSimple, Score: round(v.Score), Reasons: v.Reasons}
	if v.Complex {
		c.Level = LevelComplex
	} else {
		c.Reasons = []string{}
	}
	return c
}
