package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// What examples/py-agent/agent.py serves and how it signs its events.
const (
	pyCapability = "shout"
	pySource     = "/examples/py-agent"
)

// TestPythonAgent runs examples/py-agent, written only from the README's
// wire section with nats-py, through the checks TestTypeScriptAgent makes
// (testShoutProgram). nats-py is not vendored: without it the test skips
// and TestPythonAgentSource still checks the program.
func TestPythonAgent(t *testing.T) {
	python, dir := pythonAgent(t)
	if out, err := exec.Command(python, "-c", "import nats, nats.js").CombinedOutput(); err != nil {
		t.Logf("%s -c 'import nats, nats.js': %v\n%s", python, err, out)
		t.Skip("nats-py is not installed (pip install -r examples/py-agent/requirements.txt); the Python agent's source is still checked by TestPythonAgentSource")
	}
	testShoutProgram(t, shoutProgram{prefix: "py", language: "python", source: pySource,
		command: func(env []string) *exec.Cmd {
			cmd := exec.Command(python, "agent.py")
			cmd.Dir = dir
			// Unbuffered, so a traceback reaches the log before a kill; no
			// __pycache__ written into the repository.
			cmd.Env = append(append(os.Environ(), "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"), env...)
			return cmd
		}})
}

// TestPythonAgentSource checks examples/py-agent/agent.py where nats-py
// cannot be installed: it compiles; every wire name it spells is the
// project's (from the subjects, events and bus constants and builders, so
// that renaming one fails here); and, run against a stand-in for nats-py,
// it answers step requests as the Go decoder and schemas accept.
func TestPythonAgentSource(t *testing.T) {
	python, dir := pythonAgent(t)
	src := filepath.Join(dir, "agent.py")

	t.Run("compiles", func(t *testing.T) {
		cmd := exec.Command(python, "-c", "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)",
			src, filepath.Join(t.TempDir(), "agent.pyc"))
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("py_compile %s: %v\n%s", src, err, out)
		}
	})

	t.Run("spells the project's wire names", func(t *testing.T) {
		checkPyWireNames(t, python, src)
	})

	t.Run("answers steps against a stand-in nats-py", func(t *testing.T) {
		checkPyAnswers(t, python, dir)
	})
}

// pythonAgent returns the python3 to run and examples/py-agent's
// directory, or skips the test when there is no python3.
func pythonAgent(t *testing.T) (python, dir string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found on PATH: the Python agent example needs Python 3.8+ (apt-get install python3)")
	}
	dir, err = filepath.Abs("../../examples/py-agent")
	if err != nil {
		t.Fatal(err)
	}
	return python, dir
}

// pyStrings lists, with Python's own parser, every string literal of a
// program and every f-string, rendered with the module's string
// constants (CAPABILITY, …) filled in and any other expression as "{}";
// and the module's string constants.
const pyStrings = `
import ast, json, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1])
consts = {}
def render(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            elif isinstance(v.value, ast.Name) and v.value.id in consts:
                out.append(consts[v.value.id])
            else:
                out.append("{}")
        return "".join(out)
    return None
for stmt in tree.body:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        s = render(stmt.value)
        if s is not None and "{}" not in s:
            consts[stmt.targets[0].id] = s
found = set()
class Strings(ast.NodeVisitor):
    def visit_Constant(self, node):
        if isinstance(node.value, str):
            found.add(node.value)
    def visit_JoinedStr(self, node):
        found.add(render(node))
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                self.visit(v.value)
Strings().visit(tree)
json.dump({"constants": consts, "strings": sorted(found)}, sys.stdout)
`

// Placeholders for the ids a program fills in at run time: names built
// with them read as the program's f-strings do once "{}" replaces them.
const (
	anyTenant   = "tenant0"
	anyWorkflow = "workflow0"
	anyStep     = "step0"
	anyAttempt  = 97531
)

var placeholders = strings.NewReplacer(anyTenant, "{}", anyWorkflow, "{}", anyStep, "{}", strconv.Itoa(anyAttempt), "{}")

// wireLike matches a literal that names something on the wire (a subject,
// stream, consumer, header, event type or dedup id), not prose.
var wireLike = regexp.MustCompile(`^(agentbus\.|io\.agentbus\.|AGENTBUS_|ce-|Agentbus-|Nats-|Content-|step-|\{\}/)[A-Za-z0-9_.*{}/-]*$`)

// pyWireNames returns the names the Python agent must spell, by what they
// are, and every name of the project it may spell, all from Go.
func pyWireNames(t *testing.T) (required map[string]string, known map[string]bool) {
	t.Helper()
	must := func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return placeholders.Replace(s)
	}
	stepKey := placeholders.Replace(events.StepKey(anyTenant, anyWorkflow, anyStep, anyAttempt))
	required = map[string]string{
		"steps stream":               subjects.StreamSteps,
		"step consumer":              must(subjects.StepConsumer(pyCapability)),
		"step consumer's filter":     must(subjects.StepFilter(pyCapability)),
		"reply subject":              must(subjects.Reply(anyTenant, anyWorkflow)),
		"events subject":             must(subjects.Events(anyTenant, anyWorkflow)),
		"dead letter subject":        must(subjects.DeadLetter(anyTenant, pyCapability)),
		"reply's Nats-Msg-Id":        stepKey,
		"event's Nats-Msg-Id":        stepKey + "/emit/{}", // as agents/emitter.go and the README spell it
		"dedup header":               nats.MsgIdHdr,
		"spec version":               events.SpecVersion,
		"content type":               events.ContentTypeJSON,
		"dead letter reason header":  bus.HeaderDeadLetterReason,
		"dead letter count header":   bus.HeaderDeadLetterCount,
		"dead letter by header":      bus.HeaderDeadLetterBy,
		"dead letter subject header": bus.HeaderDeadLetterSubject,
	}
	for _, h := range []string{events.HeaderSpecVersion, events.HeaderID, events.HeaderSource, events.HeaderType,
		events.HeaderTime, events.HeaderTenant, events.HeaderWorkflow, events.HeaderStep, events.HeaderContentType} {
		required["header "+h] = h
	}
	for _, typ := range []events.Type{events.TypeStepRequested, events.TypeStepCompleted, events.TypeStepFailed,
		events.TypeProgress, events.TypeArtifact} {
		required["event type "+typ.Short()] = string(typ)
	}
	known = map[string]bool{}
	for _, name := range required {
		known[name] = true
	}
	for _, typ := range events.Types() {
		known[string(typ)] = true
	}
	for _, name := range []string{events.HeaderSubject, events.HeaderTraceParent, events.HeaderDataContentType,
		subjects.StreamWorkflows, subjects.StreamReplies, subjects.StreamEvents, subjects.StreamDeadLetter,
		must(subjects.Submit(anyTenant)), must(subjects.Step(anyTenant, pyCapability)), must(subjects.Control(anyTenant, anyWorkflow))} {
		known[name] = true
	}
	return required, known
}

// checkPyWireNames fails the test if the program at src lacks one of the
// names the README's agent uses, or spells a wire name that is none of
// the project's.
func checkPyWireNames(t *testing.T, python, src string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(python, "-c", pyStrings, src)
	cmd.Stdout, cmd.Stderr = &out, &testWriter{t: t, prefix: "python3 stderr: "}
	if err := cmd.Run(); err != nil {
		t.Fatalf("listing the strings of %s: %v", src, err)
	}
	var got struct {
		Constants map[string]string `json:"constants"`
		Strings   []string          `json:"strings"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("strings of %s: %v\n%s", src, err, out.Bytes())
	}
	for name, want := range map[string]string{"CAPABILITY": pyCapability, "SOURCE": pySource} {
		if got.Constants[name] != want {
			t.Errorf("agent.py's %s = %q, the tests expect %q", name, got.Constants[name], want)
		}
	}
	spelled := map[string]bool{}
	for _, s := range got.Strings {
		spelled[s] = true
	}
	required, known := pyWireNames(t)
	for what, want := range required {
		if !spelled[want] {
			t.Errorf("agent.py does not spell the %s %q: renamed in Go, or misspelled in agent.py", what, want)
		}
	}
	for _, s := range got.Strings {
		if wireLike.MatchString(s) && !known[s] {
			t.Errorf("agent.py spells %q, which is none of the project's wire names", s)
		}
	}
}

// Stand-ins for the parts of nats-py that agent.py imports: enough to
// import it and call handle, which touches the server only through the
// message and the JetStream context it is given.
var pyStandIn = map[string]string{
	"nats/__init__.py": `async def connect(*args, **kwargs):
    raise RuntimeError("stand-in nats-py: no server")
`,
	"nats/errors.py": `import asyncio
class Error(Exception): pass
class TimeoutError(Error, asyncio.TimeoutError): pass
`,
	"nats/js/__init__.py": "",
	"nats/js/api.py": `class AckPolicy:
    EXPLICIT = "explicit"
class ConsumerConfig:
    def __init__(self, **kw): self.__dict__.update(kw)
`,
	"nats/js/errors.py": "class NotFoundError(Exception): pass\n",
}

// pyDriver runs agent.handle on each case read from stdin (a message's
// subject, headers, data and delivery count) with a JetStream context
// that records what is published, and writes what each case published
// and how the message was settled to the file named by argv[2].
const pyDriver = `
import asyncio, json, sys, types
sys.path.insert(0, sys.argv[1])
import agent
class Msg:
    def __init__(self, c):
        self.subject, self.data, self.headers = c["subject"], c["data"].encode(), c["headers"]
        self.metadata = types.SimpleNamespace(num_delivered=c["delivery"])
        self.acks = []
    async def in_progress(self): self.acks.append("+WPI")
    async def ack_sync(self, timeout=1.0): self.acks.append("+ACK")
    async def term(self): self.acks.append("+TERM")
    async def nak(self, delay=None): self.acks.append("-NAK")
class JetStream:
    def __init__(self, fail): self.fail, self.published = fail, []
    async def publish(self, subject, payload=b"", timeout=None, stream=None, headers=None):
        if self.fail:
            raise ConnectionError("stand-in: the server is unreachable")
        self.published.append({"subject": subject, "headers": headers, "data": payload.decode()})
        return types.SimpleNamespace(stream="", seq=len(self.published), duplicate=False)
async def run(c):
    msg, js = Msg(c), JetStream(c["fail_publish"])
    await agent.handle(js, msg, c["ack_wait"])
    return {"published": js.published, "acks": msg.acks}
results = [asyncio.run(run(c)) for c in json.load(sys.stdin)]
with open(sys.argv[2], "w") as f:
    json.dump(results, f)
`

// pyCase is one delivery handed to agent.handle, and what came of it.
type pyCase struct {
	Subject     string            `json:"subject"`
	Headers     map[string]string `json:"headers"`
	Data        string            `json:"data"`
	Delivery    int               `json:"delivery"`
	AckWait     float64           `json:"ack_wait"` // seconds
	FailPublish bool              `json:"fail_publish"`
}

type pyResult struct {
	Published []struct {
		Subject string            `json:"subject"`
		Headers map[string]string `json:"headers"`
		Data    string            `json:"data"`
	} `json:"published"`
	Acks []string `json:"acks"`
}

// runPyCases runs agent.handle from dir on each case against the stand-in
// nats-py, with env added to the program's environment.
func runPyCases(t *testing.T, python, dir string, env []string, cases []pyCase) []pyResult {
	t.Helper()
	tmp := t.TempDir()
	for name, text := range pyStandIn {
		p := filepath.Join(tmp, "standin", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	outFile := filepath.Join(tmp, "results.json")
	cmd := exec.CommandContext(ctx, python, "-c", pyDriver, dir, outFile)
	cmd.Env = append(append(os.Environ(), "PYTHONPATH="+filepath.Join(tmp, "standin"), "PYTHONDONTWRITEBYTECODE=1"), env...)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout = &testWriter{t: t, prefix: "agent.py: "}
	cmd.Stderr = &testWriter{t: t, prefix: "agent.py stderr: "}
	if err := cmd.Run(); err != nil {
		t.Fatalf("running agent.handle against the stand-in nats-py: %v", err)
	}
	b, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []pyResult
	if err := json.Unmarshal(b, &out); err != nil || len(out) != len(cases) {
		t.Fatalf("results of agent.handle: %v (%d for %d cases)\n%s", err, len(out), len(cases), b)
	}
	return out
}

// stepRequest is a step.requested delivery as the orchestrator publishes it.
func stepRequest(t *testing.T, workflow string, attempt, delivery int, input any) pyCase {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	env, err := events.New(events.TypeStepRequested, events.StepKey("acme", workflow, "loud", attempt), events.SourceOrchestrator,
		"acme", workflow, "loud", events.StepRequested{StepID: "loud", Capability: pyCapability, Attempt: attempt, Input: raw})
	if err != nil {
		t.Fatal(err)
	}
	m, err := events.Encode(env)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{nats.MsgIdHdr: env.ID}
	for k, vs := range m.Header {
		h[k] = vs[0]
	}
	subject, err := subjects.Step("acme", pyCapability)
	if err != nil {
		t.Fatal(err)
	}
	return pyCase{Subject: subject, Headers: h, Data: string(m.Data), Delivery: delivery, AckWait: 0.3}
}

// wantPub is what one publish of a case must be.
type wantPub struct {
	subject string
	typ     events.Type
	msgID   string // its Nats-Msg-Id, which must be its ce-id too; "" for a dead letter's, copied from the request
}

// checkPublished decodes each publish of r as the gateway and orchestrator
// would and checks it against want; it returns the envelopes.
func checkPublished(t *testing.T, name string, c pyCase, r pyResult, want []wantPub) []events.Envelope {
	t.Helper()
	if len(r.Published) != len(want) {
		t.Fatalf("%s: %d publishes, want %d: %+v", name, len(r.Published), len(want), r.Published)
	}
	out := make([]events.Envelope, len(want))
	for i, p := range r.Published {
		h := map[string][]string{}
		for k, v := range p.Headers {
			h[k] = []string{v}
		}
		e, err := events.Decode(h, []byte(p.Data))
		if err != nil {
			t.Errorf("%s: publish %d on %s does not decode: %v\nheaders %v\ndata %s", name, i, p.Subject, err, p.Headers, p.Data)
			continue
		}
		out[i] = e
		w := want[i]
		if p.Subject != w.subject || e.Type != w.typ {
			t.Errorf("%s: publish %d is %s on %s, want %s on %s", name, i, e.Type, p.Subject, w.typ, w.subject)
		}
		if e.TenantID != c.Headers[events.HeaderTenant] || e.WorkflowID != c.Headers[events.HeaderWorkflow] || e.StepID != "loud" {
			t.Errorf("%s: publish %d names tenant %q, workflow %q, step %q; want the request's", name, i, e.TenantID, e.WorkflowID, e.StepID)
		}
		if w.msgID != "" && (p.Headers[nats.MsgIdHdr] != w.msgID || e.ID != w.msgID || e.Source != pySource) {
			t.Errorf("%s: publish %d has %s %q, ce-id %q, ce-source %q; want %q, %q, %q", name, i,
				nats.MsgIdHdr, p.Headers[nats.MsgIdHdr], e.ID, e.Source, w.msgID, w.msgID, pySource)
		}
		if w.msgID != "" && (e.Time.IsZero() || time.Since(e.Time) > deadline) {
			t.Errorf("%s: publish %d has ce-time %q, want now", name, i, p.Headers[events.HeaderTime])
		}
	}
	return out
}

// checkPyAnswers runs agent.handle on step requests as the orchestrator
// publishes them and checks its answers, events, dead letter and acks.
func checkPyAnswers(t *testing.T, python, dir string) {
	t.Helper()
	ok := stepRequest(t, "py-ok", 2, 3, map[string]any{"text": "hello"}) // attempt 2, delivered a third time
	bad := stepRequest(t, "py-bad", 1, 1, map[string]any{"words": 3})
	notJSON := stepRequest(t, "py-junk", 1, 1, nil)
	notJSON.Data = "not json"
	noTenant := stepRequest(t, "py-anon", 1, 1, map[string]any{"text": "who"})
	delete(noTenant.Headers, events.HeaderTenant)
	dead := stepRequest(t, "py-dl", 1, 6, map[string]any{"text": "too late"})
	down := stepRequest(t, "py-down", 1, 1, map[string]any{"text": "unheard"})
	down.FailPublish = true
	cases := []pyCase{ok, bad, notJSON, noTenant, dead, down}
	// 300 ms of work and AckWait 0.3 s: in-progress acks every 0.1 s.
	res := runPyCases(t, python, dir, []string{"AGENT_WORK_MS=300", "AGENT_MAX_DELIVER=5"}, cases)
	reply := func(wf string) string { s, _ := subjects.Reply("acme", wf); return s }
	evs := func(wf string) string { s, _ := subjects.Events("acme", wf); return s }
	acks := func(r pyResult) string { return strings.Join(r.Acks, " ") }

	key := events.StepKey("acme", "py-ok", "loud", 2) // the request's attempt, not its delivery count
	got := checkPublished(t, "completed", ok, res[0], []wantPub{
		{evs("py-ok"), events.TypeProgress, key + "/emit/1"},
		{evs("py-ok"), events.TypeArtifact, key + "/emit/2"},
		{reply("py-ok"), events.TypeStepCompleted, key},
	})
	var done struct {
		events.StepCompleted
		Output struct {
			Text string `json:"text"`
		} `json:"output"`
	}
	if err := got[2].Unmarshal(&done); err != nil || done.StepID != "loud" || done.Capability != pyCapability ||
		done.Attempt != 2 || done.Output.Text != "HELLO" {
		t.Errorf("step.completed data %s (%v), want step loud of shout, attempt 2, output HELLO", got[2].Data, err)
	}
	if a := acks(res[0]); !strings.HasPrefix(a, "+WPI") || !strings.HasSuffix(a, "+WPI +ACK") {
		t.Errorf("completed step settled with %q, want in-progress acks while it works, then one +ACK", a)
	}

	got = checkPublished(t, "bad input", bad, res[1], []wantPub{
		{reply("py-bad"), events.TypeStepFailed, events.StepKey("acme", "py-bad", "loud", 1)},
	})
	var failed events.StepFailed
	if err := got[0].Unmarshal(&failed); err != nil || !strings.Contains(failed.Error, "input.text must be a string") || failed.Retryable {
		t.Errorf("step.failed data %s (%v), want a permanent error naming input.text", got[0].Data, err)
	}
	if a := acks(res[1]); a != "+ACK" {
		t.Errorf("bad input settled with %q, want +ACK", a)
	}

	for i, name := range map[int]string{2: "data not JSON", 3: "no ce-tenantid"} {
		if len(res[i].Published) != 0 || acks(res[i]) != "+TERM" {
			t.Errorf("%s: published %+v and settled with %q, want nothing and +TERM", name, res[i].Published, acks(res[i]))
		}
	}

	dl, _ := subjects.DeadLetter("acme", pyCapability)
	got = checkPublished(t, "past MaxDeliver", dead, res[4], []wantPub{
		{dl, events.TypeStepRequested, ""},
		{reply("py-dl"), events.TypeStepFailed, events.StepKey("acme", "py-dl", "loud", 1)},
	})
	h := res[4].Published[0].Headers
	if h[bus.HeaderDeadLetterReason] == "" || h[bus.HeaderDeadLetterCount] != "6" || h[bus.HeaderDeadLetterBy] != pySource ||
		h[bus.HeaderDeadLetterSubject] != dead.Subject || res[4].Published[0].Data != dead.Data || h[nats.MsgIdHdr] != dead.Headers[nats.MsgIdHdr] {
		t.Errorf("dead letter %v %s: want the request, its headers, and the reason, deliveries 6, by and subject", h, res[4].Published[0].Data)
	}
	if err := got[1].Unmarshal(&failed); err != nil || !strings.Contains(failed.Error, "dead-lettered") {
		t.Errorf("step.failed data %s (%v), want it saying dead-lettered", got[1].Data, err)
	}
	if a := acks(res[4]); a != "+ACK" {
		t.Errorf("dead-lettered step settled with %q, want +ACK", a)
	}

	if a := acks(res[5]); len(res[5].Published) != 0 || !strings.HasSuffix(a, "-NAK") || strings.Contains(a, "+ACK") {
		t.Errorf("step whose answer could not be published settled with %q, want -NAK (retry) and no +ACK", a)
	}
}
