package sessions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/sessions"
)

func turns(queries ...string) []events.Turn {
	out := make([]events.Turn, len(queries))
	for i, q := range queries {
		out[i] = events.Turn{N: i + 1, WorkflowID: "wf" + string(rune('a'+i)), Query: q, Status: events.StateCompleted}
	}
	return out
}

func TestResolve(t *testing.T) {
	rw := turns("how does sync.RWMutex work")
	for _, tc := range []struct {
		name, query string
		history     []events.Turn
		want        string
		followUp    bool
		turn        int
	}{
		{"what about the X", "and what about the read lock?", rw, "sync.RWMutex read lock", true, 1},
		{"possessive pronoun", "and what about its read lock?", rw, "sync.RWMutex read lock", true, 1},
		{"pronoun in a question", "how does it compare with sync.Mutex?", rw, "how does sync.RWMutex compare with sync.Mutex", true, 1},
		{"short pronoun question", "is it fair to writers?", rw, "is sync.RWMutex fair to writers", true, 1},
		{"subject switch", "what about sync.Mutex?", rw, "how does sync.Mutex work", true, 1},
		{"demonstrative before a verb", "does this block readers?", rw, "does sync.RWMutex block readers", true, 1},
		{"demonstrative after is", "is that reentrant?", rw, "is sync.RWMutex reentrant", true, 1},
		{"demonstrative last", "give an example of this", rw, "give an example of sync.RWMutex", true, 1},
		{"determiner, not a pronoun", "how does this package handle timeouts in servers", rw,
			"how does this package handle timeouts in servers", false, 0},
		{"standalone", "how do I read a file line by line", rw, "how do I read a file line by line", false, 0},
		{"standalone after and", "and how do channels work?", rw, "and how do channels work?", false, 0},
		{"long query with it", "what is it that makes goroutines so much cheaper than operating system threads in practice", rw,
			"what is it that makes goroutines so much cheaper than operating system threads in practice", false, 0},
		{"no history", "and what about the read lock?", nil, "and what about the read lock?", false, 0},
		{"carried through a resolved turn",
			"and what about its read lock?",
			[]events.Turn{
				{N: 1, WorkflowID: "w1", Query: "how does sync.RWMutex work"},
				{N: 2, WorkflowID: "w2", Query: "how does it compare with sync.Mutex?", ResolvedQuery: "how does sync.RWMutex compare with sync.Mutex"},
			}, "sync.RWMutex read lock", true, 2},
		{"plural pronoun takes every identifier",
			"what are their zero values?",
			[]events.Turn{{N: 1, WorkflowID: "w1", Query: "compare sync.Mutex and sync.RWMutex"}},
			"what are sync.Mutex and sync.RWMutex zero values", true, 1},
		{"the turn whose subject the follow-up names, not the newest",
			"and what about the mutex read lock?",
			[]events.Turn{
				{N: 1, WorkflowID: "w1", Query: "how does sync.RWMutex work"},
				{N: 2, WorkflowID: "w2", Query: "how do I split lines with bufio.Scanner"},
			}, "sync.RWMutex mutex read lock", true, 1},
		{"turn 3 needs turn 1: the answers say which",
			"and what about its read lock?",
			[]events.Turn{
				{N: 1, WorkflowID: "w1", Query: "how does sync.RWMutex work", Answer: "A RWMutex is a reader/writer mutual exclusion lock. The lock can be held by an arbitrary number of readers or a single writer."},
				{N: 2, WorkflowID: "w2", Query: "how do I parse a URL query string with net/url", Answer: "ParseQuery parses the URL-encoded query string and returns a map listing the values specified for each key."},
			}, "sync.RWMutex read lock", true, 1},
		{"content words when no identifier", "and what about closing them?",
			turns("how do buffered channels work"), "closing buffered channels", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sessions.Resolve(tc.query, tc.history)
			if got.Query != tc.want || got.FollowUp != tc.followUp || got.Turn != tc.turn {
				t.Fatalf("Resolve(%q) = %+v, want query %q follow-up %v turn %d", tc.query, got, tc.want, tc.followUp, tc.turn)
			}
			if why := got.Why(tc.query); tc.followUp != (why != "") {
				t.Fatalf("Why = %q", why)
			}
		})
	}
}

func TestIsFollowUp(t *testing.T) {
	for q, want := range map[string]bool{
		"and what about the read lock?":  true,
		"how about bufio.Reader":         true,
		"is it safe for concurrent use?": true,
		"how does it compare?":           true,
		"how does sync.RWMutex work":     false,
		"explain context cancellation":   false,
		"":                               false,
	} {
		if got := sessions.IsFollowUp(q); got != want {
			t.Errorf("IsFollowUp(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestSubject(t *testing.T) {
	for q, want := range map[string]string{
		"how does sync.RWMutex work":           "sync.RWMutex",
		"what does net/http.Client.Do return":  "net/http.Client.Do",
		"read json with encoding/json":         "encoding/json",
		"when should I use a WaitGroup":        "WaitGroup",
		"how do buffered channels work in Go?": "buffered channels",
		"explain the `select` statement in Go": "select",
	} {
		if _, got := sessions.Subject(q); got != want {
			t.Errorf("Subject(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestExtractiveSummary(t *testing.T) {
	ctx := context.Background()
	ts := []events.Turn{
		{N: 1, Query: "how does sync.RWMutex work", Status: events.StateCompleted,
			Answer: "## sync.RWMutex\n\n**RWMutex** is a reader/writer mutual exclusion lock [1]. The lock can be held by many readers."},
		{N: 2, Query: "and its read lock?", ResolvedQuery: "sync.RWMutex read lock", Status: events.StateCompleted,
			Answer: "- RLock locks rw for reading [2]"},
		{N: 3, Query: "what about cancellation", Status: events.StateFailed},
	}
	got, by, err := sessions.Extractive{}.Summarize(ctx, "", ts)
	if err != nil || by != sessions.MethodExtractive {
		t.Fatalf("Summarize: %q, %v", by, err)
	}
	want := "1. how does sync.RWMutex work — RWMutex is a reader/writer mutual exclusion lock.\n" +
		"2. sync.RWMutex read lock — RLock locks rw for reading\n" +
		"3. what about cancellation — failed"
	if got != want {
		t.Fatalf("summary:\n%s\nwant:\n%s", got, want)
	}
	// Rolling: the previous summary's lines come first; the newest
	// MaxLines are kept.
	again, _, _ := sessions.Extractive{MaxLines: 3}.Summarize(ctx, got, []events.Turn{{N: 4, Query: "how do I use context.WithTimeout", Status: events.StateCompleted}})
	if lines := strings.Split(again, "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "2. ") || lines[2] != "4. how do I use context.WithTimeout" {
		t.Fatalf("rolled summary:\n%s", again)
	}
}

// TestResolveLabelled measures Resolve on testdata/followups.jsonl:
// follow-ups people type after a first question (and standalone queries
// that must stay as typed), each with the query wanted.
func TestResolveLabelled(t *testing.T) {
	data, err := os.ReadFile("testdata/followups.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	total, right := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c struct {
			History []string `json:"history"`
			Answers []string `json:"answers"`
			Query   string   `json:"query"`
			Want    string   `json:"want"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var h []events.Turn
		for i, q := range c.History {
			tn := events.Turn{N: i + 1, WorkflowID: fmt.Sprintf("w%d", i), Query: q}
			if i < len(c.Answers) {
				tn.Answer = c.Answers[i]
			}
			h = append(h, tn)
		}
		total++
		if got := sessions.Resolve(c.Query, h).Query; got == c.Want {
			right++
		} else {
			t.Logf("after %q: %q → %q, want %q", c.History, c.Query, got, c.Want)
		}
	}
	t.Logf("resolved as wanted: %d of %d (%.0f%%)", right, total, 100*float64(right)/float64(total))
	if right*10 < total*9 {
		t.Fatalf("only %d of %d resolved as wanted", right, total)
	}
}
