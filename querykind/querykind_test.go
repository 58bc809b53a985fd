package querykind_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/querykind"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		query   string
		complex bool
		score   float64
		reasons string // the reasons joined with "; "
	}{
		{"what is kubernetes", false, 0.06, ""},
		{"how do I make bread and butter", false, 0.14, ""}, // "butter" is no clause
		{"who reported the outage", false, 0.08, ""},        // "reported" is not "report"
		{"", false, 0, ""},
		{"compare raft and paxos", true, 0.58, `asks for analysis: "compare"`},
		{"what are the trade-offs of event sourcing", true, 0.66, `asks for analysis: "trade offs"`},
		{"how does raft elect a leader and why is it safe", true, 0.72, "why/how with 2 clauses"},
		{"what is raft? what is paxos? compare them", true, 1, `asks for analysis: "compare"; 2 questions`},
		{strings.Repeat("word ", 30), true, 0.98, "30 words"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			v := querykind.Classify(tt.query)
			if v.Complex != tt.complex || strings.Join(v.Reasons, "; ") != tt.reasons || fmt.Sprintf("%.2f", v.Score) != fmt.Sprintf("%.2f", tt.score) {
				t.Fatalf("Classify(%q) = %+v, want complex %v score %.2f reasons %q", tt.query, v, tt.complex, tt.score, tt.reasons)
			}
			if v.Complex != (v.Score >= 0.5) {
				t.Fatalf("score %.2f disagrees with complex %v", v.Score, v.Complex)
			}
		})
	}
}

func TestWords(t *testing.T) {
	if got := strings.Join(querykind.Words("Trade-offs of NATS 2.10, vs. Kafka!"), " "); got != "trade offs of nats 2 10 vs kafka" {
		t.Fatalf("Words = %q", got)
	}
}
