package orchestrator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/orchestrator"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		query   string
		complex bool
		reason  string // a substring of the reasons, when complex
	}{
		{"what is kubernetes", false, ""},
		{"What is NATS JetStream?", false, ""},
		{"find documents about vector databases", false, ""},
		{"summarize the latest release notes", false, ""},
		{"how do I install go", false, ""},
		{"how do I make bread and butter", false, ""}, // "butter" is no clause
		{"explain raft consensus", false, ""},
		{"who reported the outage", false, ""}, // "reported" is not "report"
		{"list the different storage engines", false, ""},
		{"", false, ""},

		{"compare raft and paxos", true, `"compare"`},
		{"postgres vs mysql for analytics", true, `"vs"`},
		{"Analyze the impact of rate limits on our API", true, `"analyze"`},
		{"write a report on vector databases", true, `"report"`},
		{"what are the trade-offs of event sourcing", true, `"trade offs"`},
		{"an in depth look at kafka", true, `"in depth"`},
		{"how does raft elect a leader and why is it safe", true, "why/how with 2 clauses"},
		{"why did the deploy fail, and what should we change", true, "why/how with 2 clauses"},
		{"what is raft? what is paxos?", true, "2 questions"},
		{"list the brokers we run, show their versions, then name the oldest one", true, "3 clauses"},
		{strings.Repeat("word ", 25), true, "25 words"},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			got := orchestrator.Classify(c.query)
			if got.Complex != c.complex {
				t.Fatalf("Classify(%q) = %s, want complex=%v", c.query, got, c.complex)
			}
			if c.complex && !strings.Contains(got.String(), c.reason) {
				t.Fatalf("Classify(%q) = %s, want a reason mentioning %s", c.query, got, c.reason)
			}
			if !c.complex && (got.String() != "simple" || len(got.Reasons) != 0) {
				t.Fatalf("simple query with reasons: %s", got)
			}
			if again := orchestrator.Classify(c.query); again.String() != got.String() {
				t.Fatalf("not deterministic: %s then %s", got, again)
			}
		})
	}
}

func ExampleClassify() {
	fmt.Println(orchestrator.Classify("what is kubernetes"))
	fmt.Println(orchestrator.Classify("compare raft and paxos"))
	fmt.Println(orchestrator.Classify("how does raft elect a leader and why is it safe?"))
	// Output:
	// simple
	// complex (asks for analysis: "compare")
	// complex (why/how with 2 clauses)
}
