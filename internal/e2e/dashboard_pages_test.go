package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/agents/entities"
	"github.com/agentbus/agentbus/agents/memory"
	"github.com/agentbus/agentbus/agents/search"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/subjects"
)

// ragAgents are the agents a question needs (entities, memory, search over
// an embedded index holding docs for tenant, compose), as `agentbus serve`
// runs them.
func ragAgents(t *testing.T, env *bustest.Env, tenant string, docs map[string]string) []agents.Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	ix, err := embedded.Open(embedded.Config{Dir: filepath.Join(t.TempDir(), "index")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	var chunks []retrieval.Chunk
	for id, text := range docs {
		chunks = append(chunks, retrieval.Chunk{ID: id + "#0", DocID: id, Title: "The " + id + " guide", Text: text, Source: "test"})
	}
	if err := ix.Index(ctx, tenant, chunks); err != nil {
		t.Fatal(err)
	}
	kv, err := env.Bus.KV(ctx, subjects.BucketMemory)
	if err != nil {
		t.Fatal(err)
	}
	ent, err1 := entities.New(entities.Config{})
	mem, err2 := memory.New(memory.Config{KV: kv})
	sea, err3 := search.New(search.Config{Backend: ix})
	com, err4 := compose.New(compose.Config{})
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return []agents.Agent{ent, mem, sea, com}
}

// TestDashboardAnswer submits a question from the Submit page and reads
// its answer, whose [n] citations open the cited chunk.
func TestDashboardAnswer(t *testing.T) {
	env := bustest.New(t)
	docs := map[string]string{
		"consumers": "A JetStream consumer acknowledges each message it processed; an unacknowledged message is redelivered after the ack wait.",
		"streams":   "A JetStream stream stores messages on subjects and keeps them by limits, interest or work-queue retention.",
		"kv":        "A key-value bucket keeps the history of each key, so a client can read an earlier revision of a value.",
	}
	d := startDashOn(t, env, stackOptions{agents: ragAgents(t, env, "acme", docs)}, acmeClient)
	d.open(t, "/submit", `[data-testid="query"]`)
	d.shot(t, "submit-query")
	d.run(t, sendKeys(`[data-testid="query"]`, "how does a JetStream consumer acknowledge messages?"))
	d.click(t, `[data-testid="submit"]`)
	d.visible(t, `[data-testid="answer"] .md a.cite`)
	d.until(t, headState+` === 'completed'`)
	var answer string
	d.eval(t, `document.querySelector('[data-testid="answer"] .md').textContent`, &answer)
	if !strings.Contains(answer, "acknowledges each message") {
		t.Fatalf("answer %q does not say what the consumers document says", answer)
	}
	// The first citation opens its chunk in the side panel.
	var n string
	d.eval(t, `document.querySelector('[data-testid="answer"] .md a.cite').dataset.cite`, &n)
	d.click(t, `[data-testid="answer"] .md a.cite`)
	d.visible(t, `[data-testid="chunk"]`)
	var chunk string
	d.eval(t, `document.querySelector('[data-testid="chunk"]').textContent`, &chunk)
	found := false
	for _, text := range docs {
		found = found || chunk == text
	}
	if !found {
		t.Fatalf("citation [%s] shows %q, not a chunk of the index", n, chunk)
	}
	d.shot(t, "workflow-answer")
	// The list shows it, completed, with its query.
	d.open(t, "/", `[data-testid="workflows"] tbody tr[data-status="completed"]`)
	d.shot(t, "workflows")
	// The agents page, its capabilities (search idle again: nothing of
	// acme's waits) and the discovery box.
	d.open(t, "/agents", `[data-testid="agents"] tr[data-agent="search"]`)
	d.visible(t, `[data-testid="capabilities"] tr[data-capability="search"][data-flow="idle"]`)
	d.run(t, sendKeys(`[data-testid="discover"]`, "find documents about consumers"))
	d.click(t, `form.discover button[type="submit"]`)
	d.visible(t, `[data-match]`)
	d.shot(t, "agents")
}

// TestDashboardViewerAndTenancy signs in with a viewer token on the Login
// page: the page shows no button that changes anything, and another
// tenant's workflow is not reachable.
func TestDashboardViewerAndTenancy(t *testing.T) {
	d := startDash(t, stackOptions{}, "")
	mine := d.submitPlan(t, acmeClient, "dash-view", map[string]any{"id": "draft", "capability": "echo"},
		map[string]any{"id": "review", "capability": "echo", "depends_on": []string{"draft"}, "requires_approval": true})
	theirs := d.submitPlan(t, betaClient, "dash-theirs", sleepChain(1, 1)...)

	// Without a token the page asks for one.
	d.open(t, "/workflows/"+mine, `#token`)
	d.shot(t, "login")
	d.run(t, sendKeys(`#token`, "not-a-token"))
	d.click(t, `.login button[type="submit"]`)
	d.until(t, `document.querySelector('#login-error').textContent.includes('does not know')`)
	d.setInput(t, `#token`, acmeViewer)
	d.click(t, `.login button[type="submit"]`)
	// Back on the page asked for, as a viewer.
	d.visible(t, `[data-step="review"][data-state="awaiting"]`)
	var role string
	d.eval(t, `document.querySelector('.role').textContent`, &role)
	if role != "viewer" {
		t.Fatalf("role shown %q", role)
	}
	d.visible(t, `[data-testid="checkpoints"] li`)
	var mutating []string
	d.eval(t, `[...document.querySelectorAll('[data-action], [data-testid="approval"], [data-testid="controls"], .timeline button')].map((e) => e.outerHTML.slice(0, 80))`, &mutating)
	if len(mutating) > 0 {
		t.Fatalf("a viewer sees buttons that change state: %v", mutating)
	}
	d.shot(t, "workflow-viewer")
	d.open(t, "/submit", `[data-testid="read-only"]`)

	// The list holds this tenant's workflow only; the other's is not found.
	d.open(t, "/", fmt.Sprintf(`[data-testid="workflows"] tr[data-id=%q]`, mine))
	var ids []string
	d.eval(t, `[...document.querySelectorAll('[data-testid="workflows"] tbody tr[data-id]')].map((r) => r.dataset.id)`, &ids)
	if len(ids) != 1 || ids[0] != mine {
		t.Fatalf("the list shows %v, want only %s", ids, mine)
	}
	// New workflows and their changes arrive without a reload; another
	// tenant's never do.
	live := d.submitPlan(t, acmeClient, "dash-live", sleepChain(2, 200)...)
	d.submitPlan(t, betaClient, "dash-live-theirs", sleepChain(1, 1)...)
	d.visible(t, fmt.Sprintf(`[data-testid="workflows"] tr[data-id=%q][data-status="completed"]`, live))
	d.eval(t, `[...document.querySelectorAll('[data-testid="workflows"] tbody tr[data-id]')].map((r) => r.dataset.id).sort()`, &ids)
	if want := []string{"dash-live", mine}; !slices.Equal(ids, want) {
		t.Fatalf("the live list shows %v, want %v", ids, want)
	}
	var buttons int
	d.eval(t, `document.querySelectorAll('[data-action]').length`, &buttons)
	if buttons != 0 {
		t.Fatalf("a viewer sees %d buttons that change state on the list", buttons)
	}
	d.shot(t, "workflows-viewer")
	d.open(t, "/workflows/"+theirs, `[data-testid="not-found"]`)
	if st := d.call(t, http.MethodGet, "/v1/workflows/"+theirs+"/events", acmeViewer, nil, nil); st != http.StatusNotFound {
		t.Fatalf("another tenant's events: %d", st)
	}
	d.shot(t, "workflow-other-tenant")
}
