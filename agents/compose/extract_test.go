package compose

import (
	"slices"
	"testing"
)

func TestSentenceSplitting(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"two sentences", "The consumer acks. Then the server forgets it.",
			[]string{"The consumer acks.", "Then the server forgets it."}},
		{"abbreviation stays", "Use a durable, e.g. one named orders. It survives restarts.",
			[]string{"Use a durable, e.g. one named orders.", "It survives restarts."}},
		{"question and quote", `Why ack? "Because" it says so. 3 retries follow!`,
			[]string{"Why ack?", `"Because" it says so.`, "3 retries follow!"}},
		{"headings, lists and code", "# Title\n\nFirst line\ncontinues here.\n\n- item one is here\n2. item two is here\n```\ncode. Not text.\n```\n| a | b |",
			[]string{"First line continues here.", "item one is here", "item two is here"}},
		{"version numbers", "Version 2.10 added TTLs. Use it.", []string{"Version 2.10 added TTLs.", "Use it."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range paragraphs(tt.text) {
				got = append(got, splitSentences(p)...)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPickDropsNearDuplicates(t *testing.T) {
	hs := []hit{
		{ID: "a#0", Text: "The durable consumer acknowledges every message it processes."},
		{ID: "b#0", Text: "The durable consumer acknowledges every message it processes quickly."},
		{ID: "c#0", Text: "Acknowledged messages are removed from a work queue stream."},
	}
	cands := sentences(hs)
	score(cands, terms("consumer acknowledges messages"))
	got := pick(cands, 3)
	if len(got) != 2 || got[0].hit != 0 || got[1].hit != 2 {
		t.Fatalf("picked %+v, want a#0 then c#0", got)
	}
}

// TestCodeIsNotASentence: declarations and code lines in a hit are not
// candidate sentences; prose around them is.
func TestCodeIsNotASentence(t *testing.T) {
	text := "func (u *URL) Query() Values\n\nQuery parses RawQuery and returns the corresponding values.\n\n" +
		"type Encoding struct { // contains filtered or unexported fields }\n\nx := url.Values{} is how a map starts out."
	var got []string
	for _, s := range sentences([]hit{{Text: text}}) {
		got = append(got, s.text)
	}
	if len(got) != 1 || got[0] != "Query parses RawQuery and returns the corresponding values." {
		t.Fatalf("sentences %q, want only the prose one", got)
	}
}

func TestFragment(t *testing.T) {
	for s, want := range map[string]bool{
		"cannot be upgraded into a RWMutex.Lock, nor can a RWMutex.Lock be downgraded.": true,
		"and then it stops.":                        true,
		"A RWMutex is a reader/writer lock.":        false,
		"os.Open opens the named file for reading.": false,
		"len(s) is the number of bytes.":            false,
		"iOS builds need a signed binary.":          false,
	} {
		if got := fragment(s); got != want {
			t.Errorf("fragment(%q) = %v, want %v", s, got, want)
		}
	}
}
