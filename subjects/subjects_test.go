package subjects_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/subjects"
)

// len63 and len64 sit on either side of the 63-character token limit (one
// leading character plus up to 62 more).
var (
	len63 = "a" + strings.Repeat("b", 62)
	len64 = "a" + strings.Repeat("b", 63)
)

// tokenCase is one input to the token validators, with whether the
// lowercase grammar (tenant, workflow, capability) and the step grammar
// accept it.
type tokenCase struct {
	name    string
	in      string
	lowerOK bool // ValidTenant, ValidWorkflow, ValidCapability
	stepOK  bool // ValidStep
}

var tokenCases = []tokenCase{
	{name: "simple", in: "acme", lowerOK: true, stepOK: true},
	{name: "single char", in: "a", lowerOK: true, stepOK: true},
	{name: "single digit", in: "7", lowerOK: true, stepOK: true},
	{name: "digits and separators", in: "wf-01_a", lowerOK: true, stepOK: true},
	{name: "63 chars is the maximum", in: len63, lowerOK: true, stepOK: true},
	{name: "64 chars is too long", in: len64},
	{name: "empty", in: ""},
	{name: "uppercase", in: "Acme", stepOK: true},
	{name: "all uppercase", in: "ACME", stepOK: true},
	{name: "uppercase 63 chars", in: "A" + strings.Repeat("B", 62), stepOK: true},
	{name: "uppercase 64 chars", in: "A" + strings.Repeat("B", 63)},
	{name: "dot", in: "a.b"},
	{name: "leading dot", in: ".a"},
	{name: "trailing dot", in: "a."},
	{name: "star", in: "*"},
	{name: "star inside", in: "a*b"},
	{name: "gt", in: ">"},
	{name: "gt inside", in: "a>"},
	{name: "space", in: "a b"},
	{name: "leading space", in: " a"},
	{name: "trailing space", in: "a "},
	{name: "tab", in: "a\tb"},
	{name: "trailing newline", in: "a\n"},
	{name: "carriage return", in: "a\r"},
	{name: "nul byte", in: "a\x00"},
	{name: "slash", in: "a/b"},
	{name: "colon", in: "a:b"},
	{name: "unicode letter", in: "café"},
	{name: "unicode only", in: "日本"},
	{name: "fullwidth digit", in: "１"},
	{name: "leading hyphen", in: "-a"},
	{name: "leading underscore", in: "_a"},
	{name: "trailing hyphen", in: "a-", lowerOK: true, stepOK: true},
	{name: "invalid utf8", in: "a\xff"},
}

func TestValidators(t *testing.T) {
	validators := []struct {
		field string
		fn    func(string) error
		ok    func(tokenCase) bool
	}{
		{"tenant", subjects.ValidTenant, func(c tokenCase) bool { return c.lowerOK }},
		{"workflow", subjects.ValidWorkflow, func(c tokenCase) bool { return c.lowerOK }},
		{"capability", subjects.ValidCapability, func(c tokenCase) bool { return c.lowerOK }},
		{"step", subjects.ValidStep, func(c tokenCase) bool { return c.stepOK }},
	}
	for _, v := range validators {
		for _, c := range tokenCases {
			t.Run(v.field+"/"+c.name, func(t *testing.T) {
				err := v.fn(c.in)
				if v.ok(c) {
					if err != nil {
						t.Fatalf("Valid%s(%q) = %v, want nil", v.field, c.in, err)
					}
					return
				}
				assertTokenError(t, err, v.field, c.in)
			})
		}
	}
}

// assertTokenError checks that err is a *TokenError for field and value
// that also satisfies errors.Is(err, ErrInvalidToken).
func assertTokenError(t *testing.T, err error, field, value string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s %q: got nil error, want ErrInvalidToken", field, value)
	}
	if !errors.Is(err, subjects.ErrInvalidToken) {
		t.Errorf("%s %q: errors.Is(%v, ErrInvalidToken) = false", field, value, err)
	}
	var te *subjects.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("%s %q: errors.As(%T, *TokenError) = false", field, value, err)
	}
	if te.Field != field {
		t.Errorf("TokenError.Field = %q, want %q", te.Field, field)
	}
	if te.Value != value {
		t.Errorf("TokenError.Value = %q, want %q", te.Value, value)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "subjects: "+field+" id ") {
		t.Errorf("Error() = %q, want prefix %q", msg, "subjects: "+field+" id ")
	}
	want := subjects.TokenPattern
	if field == "step" {
		want = subjects.StepPattern
	}
	if !strings.Contains(msg, want) {
		t.Errorf("Error() = %q, want it to name the pattern %s", msg, want)
	}
}

func TestTokenErrorWrappedStillMatches(t *testing.T) {
	err := subjects.ValidTenant("a.b")
	wrapped := errors.Join(errors.New("context"), err)
	if !errors.Is(wrapped, subjects.ErrInvalidToken) {
		t.Fatalf("errors.Is through a wrapper = false for %v", wrapped)
	}
	var te *subjects.TokenError
	if !errors.As(wrapped, &te) || te.Field != "tenant" {
		t.Fatalf("errors.As through a wrapper: got %+v", te)
	}
}

// builder adapts every subject builder to one (tenant, x) signature so the
// tests and the fuzz test can treat them alike.
type builder struct {
	name string
	// field is the TokenError.Field reported for a bad x.
	field string
	fn    func(tenant, x string) (string, error)
	// kind and last are the Parsed.Kind and Parsed.Last of the output for x.
	kind string
	last func(x string) string
}

func same(x string) string { return x }

var tenantBuilders = []builder{
	{name: "Submit", fn: func(tn, _ string) (string, error) { return subjects.Submit(tn) }, kind: "workflow", last: func(string) string { return "submit" }},
	{name: "Step", field: "capability", fn: subjects.Step, kind: "step", last: same},
	{name: "Reply", field: "workflow", fn: subjects.Reply, kind: "reply", last: same},
	{name: "Events", field: "workflow", fn: subjects.Events, kind: "events", last: same},
	{name: "Live", field: "workflow", fn: subjects.Live, kind: "live", last: same},
	{name: "Control", field: "workflow", fn: subjects.Control, kind: "control", last: same},
	{name: "DeadLetter", field: "capability", fn: subjects.DeadLetter, kind: "deadletter", last: same},
}

func TestBuilders(t *testing.T) {
	tests := []struct {
		name    string
		got     func() (string, error)
		want    string
		wantErr string // TokenError.Field, "" for success
		badVal  string
	}{
		{name: "Submit", got: func() (string, error) { return subjects.Submit("acme") }, want: "agentbus.acme.workflow.submit"},
		{name: "Submit bad tenant", got: func() (string, error) { return subjects.Submit("ac.me") }, wantErr: "tenant", badVal: "ac.me"},
		{name: "Submit empty tenant", got: func() (string, error) { return subjects.Submit("") }, wantErr: "tenant", badVal: ""},
		{name: "Step", got: func() (string, error) { return subjects.Step("acme", "web-search") }, want: "agentbus.acme.step.web-search"},
		{name: "Step bad tenant", got: func() (string, error) { return subjects.Step("*", "web-search") }, wantErr: "tenant", badVal: "*"},
		{name: "Step bad capability", got: func() (string, error) { return subjects.Step("acme", ">") }, wantErr: "capability", badVal: ">"},
		{name: "Step tenant checked first", got: func() (string, error) { return subjects.Step("A", "B") }, wantErr: "tenant", badVal: "A"},
		{name: "Reply", got: func() (string, error) { return subjects.Reply("acme", "wf1") }, want: "agentbus.acme.reply.wf1"},
		{name: "Reply bad workflow", got: func() (string, error) { return subjects.Reply("acme", "wf 1") }, wantErr: "workflow", badVal: "wf 1"},
		{name: "Events", got: func() (string, error) { return subjects.Events("acme", "wf1") }, want: "agentbus.acme.events.wf1"},
		{name: "Events bad workflow", got: func() (string, error) { return subjects.Events("acme", "wf.1") }, wantErr: "workflow", badVal: "wf.1"},
		{name: "Control", got: func() (string, error) { return subjects.Control("acme", "wf1") }, want: "agentbus.acme.control.wf1"},
		{name: "Control bad workflow", got: func() (string, error) { return subjects.Control("acme", "") }, wantErr: "workflow", badVal: ""},
		{name: "DeadLetter", got: func() (string, error) { return subjects.DeadLetter("acme", "summarize") }, want: "agentbus.acme.deadletter.summarize"},
		{name: "DeadLetter bad capability", got: func() (string, error) { return subjects.DeadLetter("acme", "Summarize") }, wantErr: "capability", badVal: "Summarize"},
		{name: "StepFilter", got: func() (string, error) { return subjects.StepFilter("summarize") }, want: "agentbus.*.step.summarize"},
		{name: "StepFilter wildcard capability", got: func() (string, error) { return subjects.StepFilter("*") }, wantErr: "capability", badVal: "*"},
		{name: "StepFilter full wildcard", got: func() (string, error) { return subjects.StepFilter(">") }, wantErr: "capability", badVal: ">"},
		{name: "StepConsumer", got: func() (string, error) { return subjects.StepConsumer("summarize") }, want: "step-summarize"},
		{name: "StepConsumer bad capability", got: func() (string, error) { return subjects.StepConsumer("sum.marize") }, wantErr: "capability", badVal: "sum.marize"},
		{name: "CheckpointKey", got: func() (string, error) { return subjects.CheckpointKey("acme", "wf1") }, want: "acme.wf1"},
		{name: "CheckpointKey bad tenant", got: func() (string, error) { return subjects.CheckpointKey("acme.x", "wf1") }, wantErr: "tenant", badVal: "acme.x"},
		{name: "CheckpointKey bad workflow", got: func() (string, error) { return subjects.CheckpointKey("acme", "wf>") }, wantErr: "workflow", badVal: "wf>"},
		{name: "TenantSteps", got: func() (string, error) { return subjects.TenantSteps("acme") }, want: "agentbus.acme.step.*"},
		{name: "TenantSteps bad tenant", got: func() (string, error) { return subjects.TenantSteps("*") }, wantErr: "tenant", badVal: "*"},
		{name: "TenantQueued", got: func() (string, error) { return subjects.TenantQueued("acme") }, want: "agentbus.acme.queue.*.*"},
		{name: "TenantQueued bad tenant", got: func() (string, error) { return subjects.TenantQueued("a.b") }, wantErr: "tenant", badVal: "a.b"},
		{name: "IdempotencyKey", got: func() (string, error) { return subjects.IdempotencyKey("acme", "order-1") },
			want: "acme.0bafe22156d2698c143b86040446d366ead863ba600d5c924f3d15c786ef4057"},
		{name: "IdempotencyKey bad tenant", got: func() (string, error) { return subjects.IdempotencyKey("ac me", "k") }, wantErr: "tenant", badVal: "ac me"},
		{name: "63-char tokens", got: func() (string, error) { return subjects.Step(len63, len63) }, want: "agentbus." + len63 + ".step." + len63},
		{name: "64-char tenant", got: func() (string, error) { return subjects.Step(len64, "x") }, wantErr: "tenant", badVal: len64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if tt.wantErr != "" {
				if got != "" {
					t.Errorf("got subject %q alongside an error, want \"\"", got)
				}
				assertTokenError(t, err, tt.wantErr, tt.badVal)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStreamFiltersMatchBuilders checks that every builder's output is
// captured by the matching stream-wide wildcard, so no subject is published
// where no stream stores it.
func TestStreamFiltersMatchBuilders(t *testing.T) {
	filters := map[string]string{
		"Submit":     subjects.AllSubmissions,
		"Step":       subjects.AllSteps,
		"Reply":      subjects.AllReplies,
		"Events":     subjects.AllEvents,
		"Live":       subjects.AllLive,
		"Control":    subjects.AllControl,
		"DeadLetter": subjects.AllDeadLetters,
	}
	for _, b := range tenantBuilders {
		t.Run(b.name, func(t *testing.T) {
			s, err := b.fn("acme", "x1")
			if err != nil {
				t.Fatal(err)
			}
			f, ok := filters[b.name]
			if !ok {
				t.Fatalf("no stream filter for %s", b.name)
			}
			if !matches(f, s) {
				t.Errorf("filter %q does not match %q", f, s)
			}
			for other, of := range filters {
				if other != b.name && matches(of, s) {
					t.Errorf("filter %q for %s also matches %q", of, other, s)
				}
			}
		})
	}
	sf, err := subjects.StepFilter("x1")
	if err != nil {
		t.Fatal(err)
	}
	step, _ := subjects.Step("acme", "x1")
	if !matches(sf, step) {
		t.Errorf("StepFilter %q does not match Step %q", sf, step)
	}
	other, _ := subjects.Step("acme", "x2")
	if matches(sf, other) {
		t.Errorf("StepFilter %q matches another capability's %q", sf, other)
	}
}

// matches implements NATS subject matching for '*' (no '>' needed here).
func matches(filter, subject string) bool {
	f := strings.Split(filter, ".")
	s := strings.Split(subject, ".")
	if len(f) != len(s) {
		return false
	}
	for i := range f {
		if f[i] != "*" && f[i] != s[i] {
			return false
		}
	}
	return true
}

func TestParseRoundTrip(t *testing.T) {
	for _, b := range tenantBuilders {
		for _, x := range []string{"x", "wf-01", "summarize", len63} {
			t.Run(b.name+"/"+x[:min(len(x), 10)], func(t *testing.T) {
				s, err := b.fn("acme", x)
				if err != nil {
					t.Fatal(err)
				}
				p, err := subjects.Parse(s)
				if err != nil {
					t.Fatalf("Parse(%q): %v", s, err)
				}
				want := subjects.Parsed{Tenant: "acme", Kind: b.kind, Last: b.last(x)}
				if p != want {
					t.Fatalf("Parse(%q) = %+v, want %+v", s, p, want)
				}
			})
		}
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name    string
		subject string
		field   string // "" means ErrNotAgentbus, else TokenError.Field
		value   string
	}{
		{name: "empty", subject: ""},
		{name: "foreign root", subject: "other.acme.step.x"},
		{name: "root only", subject: "agentbus"},
		{name: "too few tokens", subject: "agentbus.acme.step"},
		{name: "too many tokens", subject: "agentbus.acme.step.x.y"},
		{name: "uppercase root", subject: "AGENTBUS.acme.step.x"},
		{name: "unknown kind", subject: "agentbus.acme.bogus.x"},
		{name: "workflow not submit", subject: "agentbus.acme.workflow.wf1"},
		{name: "stream filter", subject: subjects.AllSteps, field: "tenant", value: "*"},
		{name: "full wildcard", subject: "agentbus.>"},
		{name: "bad tenant", subject: "agentbus.Acme.step.x", field: "tenant", value: "Acme"},
		{name: "empty tenant", subject: "agentbus..step.x", field: "tenant", value: ""},
		{name: "wildcard capability", subject: "agentbus.acme.step.*", field: "capability", value: "*"},
		{name: "gt capability", subject: "agentbus.acme.deadletter.>", field: "capability", value: ">"},
		{name: "bad workflow reply", subject: "agentbus.acme.reply.WF", field: "workflow", value: "WF"},
		{name: "bad workflow events", subject: "agentbus.acme.events. ", field: "workflow", value: " "},
		{name: "empty workflow control", subject: "agentbus.acme.control.", field: "workflow", value: ""},
		{name: "trailing dot", subject: "agentbus.acme.step.x."},
		{name: "checkpoint key", subject: "acme.wf1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := subjects.Parse(tt.subject)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.subject, p)
			}
			if p != (subjects.Parsed{}) {
				t.Errorf("Parse(%q) returned %+v alongside an error, want zero", tt.subject, p)
			}
			if tt.field == "" {
				if !errors.Is(err, subjects.ErrNotAgentbus) {
					t.Fatalf("Parse(%q) = %v, want ErrNotAgentbus", tt.subject, err)
				}
				if errors.Is(err, subjects.ErrInvalidToken) {
					t.Errorf("Parse(%q) = %v also matches ErrInvalidToken", tt.subject, err)
				}
				return
			}
			assertTokenError(t, err, tt.field, tt.value)
		})
	}
}

func TestNamesAreValidNATSNames(t *testing.T) {
	// Stream, bucket and consumer names may not hold '.', '*', '>', or
	// whitespace in JetStream; keep them that way.
	names := []string{
		subjects.StreamWorkflows, subjects.StreamSteps, subjects.StreamReplies,
		subjects.StreamEvents, subjects.StreamDeadLetter,
		subjects.BucketCheckpoints, subjects.BucketAgents, subjects.BucketControl, subjects.BucketIdempotency,
		subjects.ConsumerSubmissions, subjects.ConsumerReplies,
	}
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, ".*> \t\r\n/\\") {
			t.Errorf("name %q is not a valid JetStream name", n)
		}
		if seen[n] {
			t.Errorf("name %q is used twice", n)
		}
		seen[n] = true
	}
	c, err := subjects.StepConsumer(len63)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(c, ".*> ") {
		t.Errorf("StepConsumer = %q holds a forbidden character", c)
	}
}

// TestIdempotencyKey: a key hashes to one KV key token per tenant, the
// same for the same key, whatever characters the key holds; an empty key
// is refused.
func TestIdempotencyKey(t *testing.T) {
	a, _ := subjects.IdempotencyKey("acme", "k/1 ü.*>")
	b, _ := subjects.IdempotencyKey("beta", "k/1 ü.*>")
	if !strings.HasPrefix(a, "acme.") || strings.TrimPrefix(a, "acme.") != strings.TrimPrefix(b, "beta.") || strings.Count(a, ".") != 1 ||
		strings.ContainsAny(strings.TrimPrefix(a, "acme."), "*> /") {
		t.Errorf("IdempotencyKey = %q and %q: want one hex token after each tenant", a, b)
	}
	if _, err := subjects.IdempotencyKey("acme", ""); !errors.Is(err, subjects.ErrInvalidToken) {
		t.Errorf("an empty key: %v, want ErrInvalidToken", err)
	}
	steps, _ := subjects.TenantSteps("acme")
	step, _ := subjects.Step("acme", "x1")
	other, _ := subjects.Step("beta", "x1")
	if !matches(steps, step) || matches(steps, other) {
		t.Errorf("TenantSteps %q: want %q matched and %q not", steps, step, other)
	}
	queued, _ := subjects.TenantQueued("acme")
	q, _ := subjects.Queue("acme", "x1", 3)
	if !matches(queued, q) || !matches(subjects.AllQueued, q) {
		t.Errorf("TenantQueued %q does not match %q", queued, q)
	}
}
