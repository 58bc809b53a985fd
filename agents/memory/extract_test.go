package memory_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agentbus/agentbus/agents/memory"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		text string
		want []string // "predicate=object | you"
	}{
		{"I am a Go developer.", []string{"is=go developer | you are a Go developer"}},
		{"I'm a Go developer", []string{"is=go developer | you are a Go developer"}},
		{"My name is Ada Lovelace.", []string{"name=ada lovelace | your name is Ada Lovelace"}},
		{"Call me Ada", []string{"name=ada | your name is Ada"}},
		{"I work at Acme Corp and I live in Berlin, Germany.",
			[]string{"works_at=acme corp | you work at Acme Corp", "lives_in=berlin | you live in Berlin"}},
		{"I work on agentbus. I work with Go and NATS.",
			[]string{"works_on=agentbus | you work on agentbus", "works_with=go and nats | you work with Go and NATS"}},
		{"I’m working for Globex", []string{"works_at=globex | you work for Globex"}},
		{"I prefer tabs over spaces!", []string{"prefers=tabs over spaces | you prefer tabs over spaces"}},
		{"I really like my team", []string{"likes=my team | you like your team"}},
		{"I love C++.", []string{"likes=c++ | you love C++"}},
		{"Remember that the demo is on Friday.", []string{"note=demo is on friday | you asked me to remember that the demo is on Friday"}},
		{"Remember that I work with Rust", []string{"works_with=rust | you work with Rust"}},
		{"Can you remember that I'm vegan?", []string{"is=vegan | you are vegan"}},
		{"I like node.js", []string{"likes=node.js | you like node.js"}},
		// Not facts: questions, states of mind, requests.
		{"What do I like?", nil},
		{"Do I work with Go", nil},
		{"I'm looking for documents about JetStream.", nil},
		{"I am not sure what RRF is.", nil},
		{"I am wondering how acks work", nil},
		{"I'd like a summary of the consumer docs", nil},
		{"Summarize the retry policy.", nil},
		{"I like " + longObject, nil},
		// The same fact twice in one text is one fact.
		{"I work with Go. I work with go!", []string{"works_with=go | you work with Go"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			var got []string
			for _, f := range memory.Extract(tt.text) {
				if f.Subject != memory.SubjectUser || f.Sentence == "" {
					t.Fatalf("fact %+v", f)
				}
				got = append(got, fmt.Sprintf("%s=%s | %s", f.Predicate, f.Object, f.You))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Extract(%q)\n got %q\nwant %q", tt.text, got, tt.want)
			}
		})
	}
}

const longObject = "to read long documents about every single consumer option in the whole system"

func TestHashIgnoresPhrasing(t *testing.T) {
	a := memory.Extract("I'm a Go developer.")
	b := memory.Extract("i am a   GO developer!")
	c := memory.Extract("I am a Rust developer.")
	if len(a) != 1 || len(b) != 1 || len(c) != 1 {
		t.Fatalf("facts %v %v %v", a, b, c)
	}
	if a[0].Hash() != b[0].Hash() || a[0].Hash() == c[0].Hash() {
		t.Fatalf("hashes %s %s %s", a[0].Hash(), b[0].Hash(), c[0].Hash())
	}
}
