package sessions_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/sessions"
)

// FuzzResolve: any query, after any earlier query and answer, resolves
// without panicking to a query that is not empty when the input was not,
// and valid UTF-8 when the inputs were.
func FuzzResolve(f *testing.F) {
	for _, s := range [][3]string{
		{"and what about its read lock?", "how does sync.RWMutex work", "A RWMutex is a lock."},
		{"is it İstanbul?", "what about `x`", "İİİ"},
		{"what about net/http?", "how do I parse with net/url", ""},
		{"and", "", ""},
		{"their the latter them", "compare sync.Mutex and sync.RWMutex", "both lock"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, query, earlier, answer string) {
		r := sessions.Resolve(query, []events.Turn{{N: 1, WorkflowID: "w1", Query: earlier, Answer: answer}})
		if strings.TrimSpace(query) != "" && strings.TrimSpace(r.Query) == "" {
			t.Fatalf("Resolve(%q) after %q = empty", query, earlier)
		}
		if utf8.ValidString(query) && utf8.ValidString(earlier) && !utf8.ValidString(r.Query) {
			t.Fatalf("Resolve(%q) after %q = invalid UTF-8 %q", query, earlier, r.Query)
		}
		_ = r.Why(query)
		_ = sessions.FirstSentence(answer)
	})
}
