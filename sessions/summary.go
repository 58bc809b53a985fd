package sessions

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentbus/agentbus/events"
)

// Summarizer writes a session's rolling summary: previous sums up the
// turns before turns ("" at first), and the result sums up all of them.
// by names the method ("extractive", or a model's name) for the session's
// summary_by, also when err is set.
type Summarizer interface {
	Summarize(ctx context.Context, previous string, turns []events.Turn) (text, by string, err error)
}

// Extractive is the deterministic Summarizer: one line per turn, "N. what
// was asked — the answer's first sentence", appended to the previous
// summary's lines, keeping the newest MaxLines. It needs no model and
// never fails. The zero value is ready to use.
type Extractive struct {
	// MaxLines bounds the summary; default 12 (the oldest go first).
	MaxLines int
}

var _ Summarizer = Extractive{}

// MethodExtractive is Extractive's summary_by.
const MethodExtractive = "extractive"

// Summarize implements Summarizer.
func (e Extractive) Summarize(_ context.Context, previous string, turns []events.Turn) (string, string, error) {
	limit := e.MaxLines
	if limit <= 0 {
		limit = 12
	}
	var lines []string
	for _, l := range strings.Split(previous, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	for _, t := range turns {
		lines = append(lines, summaryLine(t))
	}
	if len(lines) > limit {
		lines = lines[len(lines)-limit:]
	}
	return strings.Join(lines, "\n"), MethodExtractive, nil
}

// summaryLine is one turn in a line.
func summaryLine(t events.Turn) string {
	asked := cmp.Or(t.ResolvedQuery, t.Query)
	line := fmt.Sprintf("%d. %s", t.N, cut(oneLine(asked), 100))
	switch {
	case t.Status != "" && t.Status != events.StateCompleted:
		line += " — " + string(t.Status)
	case FirstSentence(t.Answer) != "":
		line += " — " + cut(FirstSentence(t.Answer), 180)
	}
	return line
}

var (
	citeMarks = regexp.MustCompile(`\s*\[\d+(?:,\s*\d+)*\]`)
	bullet    = regexp.MustCompile(`^(?:(?:[-*+>]|\d+[.)])\s+)+`)
	sentence  = regexp.MustCompile(`^(.+?[.!?])(?:\s|$)`)
)

// FirstSentence is the first sentence of prose in a (markdown) answer:
// headings, list bullets, emphasis and citation marks ("[1]") left out.
func FirstSentence(answer string) string {
	for _, l := range strings.Split(answer, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "```") || strings.HasPrefix(l, "|") {
			continue
		}
		l = bullet.ReplaceAllString(l, "")
		l = strings.NewReplacer("**", "", "__", "", "`", "").Replace(l)
		l = strings.TrimSpace(citeMarks.ReplaceAllString(l, ""))
		if len(l) < 3 {
			continue
		}
		if m := sentence.FindStringSubmatch(l); m != nil {
			return m[1]
		}
		return l
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
