package vespa

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// Coverage is how much of the corpus a query searched, as Vespa reports
// it in root.coverage. A partial result still has hits; Coverage tells
// the reader they may miss some. It is a value, safe to share.
type Coverage struct {
	// Percent is the share of documents searched, 0-100.
	Percent int `json:"coverage"`
	// Documents is how many documents were searched.
	Documents int64 `json:"documents"`
	// Full is false when some documents were not searched.
	Full bool `json:"full"`
	// Nodes is how many content nodes answered.
	Nodes int `json:"nodes"`
	// Results and ResultsFull count the partial results merged and how
	// many of them had full coverage.
	Results     int `json:"results"`
	ResultsFull int `json:"resultsFull"`
	// Degraded says why coverage is not full, when Vespa says.
	Degraded *Degraded `json:"degraded,omitempty"`
}

// Degraded is Vespa's root.coverage.degraded: the reasons a query did
// not search everything.
type Degraded struct {
	// MatchPhase: match-phase limiting cut the candidates.
	MatchPhase bool `json:"match-phase"`
	// Timeout: a content node ran out of time (soft timeout).
	Timeout bool `json:"timeout"`
	// AdaptiveTimeout: the adaptive timeout gave up on slow nodes.
	AdaptiveTimeout bool `json:"adaptive-timeout"`
	// NonIdealState: the cluster was redistributing data.
	NonIdealState bool `json:"non-ideal-state"`
}

// fullCoverage is what an answer without a coverage element is taken to
// mean: Vespa renders coverage whenever a content cluster was searched.
var fullCoverage = Coverage{Percent: 100, Full: true}

// Partial reports whether some documents were not searched.
func (c Coverage) Partial() bool {
	return !c.Full || c.Percent < 100 || len(c.Reasons()) > 0
}

// Reasons names the degradations Vespa reported, e.g. ["timeout"].
func (c Coverage) Reasons() []string {
	if c.Degraded == nil {
		return nil
	}
	var out []string
	for _, r := range []struct {
		on   bool
		name string
	}{
		{c.Degraded.MatchPhase, "match-phase"},
		{c.Degraded.Timeout, "timeout"},
		{c.Degraded.AdaptiveTimeout, "adaptive-timeout"},
		{c.Degraded.NonIdealState, "non-ideal-state"},
	} {
		if r.on {
			out = append(out, r.name)
		}
	}
	return out
}

// String says it in words, e.g. "partial coverage: 40% of 1000 documents
// (timeout)" — what a search agent can show its user.
func (c Coverage) String() string {
	if !c.Partial() {
		return fmt.Sprintf("full coverage of %d documents", c.Documents)
	}
	s := fmt.Sprintf("partial coverage: %d%% of %d documents", c.Percent, c.Documents)
	if r := c.Reasons(); len(r) > 0 {
		s += " (" + strings.Join(r, ", ") + ")"
	}
	return s
}

// CoverageReport is the coverage of one search made through a context
// carrying a CoverageRecorder.
type CoverageReport struct {
	Tenant   string   `json:"tenant"`
	Profile  string   `json:"profile"`
	Coverage Coverage `json:"coverage"`
}

// CoverageRecorder collects the coverage of every search made with a
// context from WithCoverageRecorder, so a caller that searches through
// the retrieval.Backend interface (retrieval.Ensemble) can still tell a
// partial result from a full one. It is safe for concurrent use.
type CoverageRecorder struct {
	mu      sync.Mutex
	reports []CoverageReport
}

type recorderKey struct{}

// WithCoverageRecorder returns a context whose searches record their
// coverage in the returned recorder.
func WithCoverageRecorder(ctx context.Context) (context.Context, *CoverageRecorder) {
	r := &CoverageRecorder{}
	return context.WithValue(ctx, recorderKey{}, r), r
}

func recorderFrom(ctx context.Context) *CoverageRecorder {
	r, _ := ctx.Value(recorderKey{}).(*CoverageRecorder)
	return r
}

func (r *CoverageRecorder) add(rep CoverageReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, rep)
}

// Reports returns every search's coverage so far, in completion order.
func (r *CoverageRecorder) Reports() []CoverageReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]CoverageReport(nil), r.reports...)
}

// Partial returns the reports of searches that did not cover everything.
func (r *CoverageRecorder) Partial() []CoverageReport {
	var out []CoverageReport
	for _, rep := range r.Reports() {
		if rep.Coverage.Partial() {
			out = append(out, rep)
		}
	}
	return out
}
