package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
)

// The dashboard's browser tests: the page at / driven in a real Chromium,
// against a whole stack, each test with its own.

// Tokens of the dashboard tests' gateways.
const (
	acmeClient = "dash-acme-client-0123456789"
	acmeViewer = "dash-acme-viewer-0123456789"
	betaClient = "dash-beta-client-0123456789"
)

func dashTokens(c *gateway.Config) {
	c.Auth.Tokens = []gateway.Token{
		{Token: acmeClient, Tenant: "acme", Role: gateway.RoleClient},
		{Token: acmeViewer, Tenant: "acme", Role: gateway.RoleViewer},
		{Token: betaClient, Tenant: "beta", Role: gateway.RoleClient},
	}
}

// dash is one dashboard test: its stack (auth on, dashTokens) and a browser
// tab of 1440×900 that has the token cookie when one was given.
type dash struct {
	*stack
	tab context.Context
	// shots is where screenshots go: $AGENTBUS_ARTIFACTS/<test>, else a
	// directory under the test's temporary directory.
	shots string

	mu       sync.Mutex
	problems []string // CSP violations and uncaught exceptions the page logged
}

func startDash(t *testing.T, opts stackOptions, token string) *dash {
	t.Helper()
	return startDashOn(t, bustest.New(t), opts, token)
}

// startDashOn is startDash on a given NATS server (whose bus the test
// needed first, say for agents).
func startDashOn(t *testing.T, env *bustest.Env, opts stackOptions, token string) *dash {
	t.Helper()
	if opts.gateway == nil {
		opts.gateway = dashTokens
	}
	d := &dash{stack: startStackOn(t, env, opts)}
	d.shots = filepath.Join(t.TempDir(), "screenshots")
	if dir := os.Getenv("AGENTBUS_ARTIFACTS"); dir != "" {
		d.shots = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
	}
	if err := os.MkdirAll(d.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	d.tab = browser(t)
	err := chromedp.Listen(d.tab, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *log.EventEntryAdded:
			if strings.Contains(e.Entry.Text, "Content Security Policy") {
				msg = "csp: " + e.Entry.Text
			}
		case *runtime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		}
		if msg != "" {
			d.mu.Lock()
			d.problems = append(d.problems, msg)
			d.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	d.run(t, chromedp.EmulateViewport(1440, 900), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, log.Enable, cdp.Empty{})
		return err
	}))
	if token != "" {
		d.setCookie(t, token)
	}
	t.Cleanup(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, p := range d.problems {
			t.Errorf("the page logged %s", p)
		}
	})
	return d
}

// run runs actions in the tab within the tests' deadline; on failure it
// saves a screenshot of the page as it was and fails the test.
func (d *dash) run(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(d.tab, deadline)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		d.shot(t, "failure")
		t.Fatalf("browser: %v (screenshot in %s)", err, d.shots)
	}
}

// open loads a page of the dashboard and waits until it shows sel.
func (d *dash) open(t *testing.T, path, sel string) {
	t.Helper()
	d.run(t, chromedp.Navigate(d.base()+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// setCookie gives the tab the token cookie, as the Login page would.
func (d *dash) setCookie(t *testing.T, token string) {
	t.Helper()
	d.run(t, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: gateway.TokenCookie, Value: token,
			Domain: "127.0.0.1", Path: "/", SameSite: network.CookieSameSiteStrict})
		return err
	}))
}

// click clicks the element sel selects (CSS) once it is visible.
func (d *dash) click(t *testing.T, sel string) {
	t.Helper()
	d.run(t, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
}

// sendKeys types text into the element sel selects (CSS).
func sendKeys(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.SendKeys(chromedp.CSS(sel), text)
}

// setInput sets the value of the input or textarea sel selects (CSS) and
// tells the page, as typing would (an input event).
func (d *dash) setInput(t *testing.T, sel, value string) {
	t.Helper()
	s, _ := json.Marshal(sel)
	v, _ := json.Marshal(value)
	d.eval(t, fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = %s; el.dispatchEvent(new Event('input', {bubbles: true})); return true })()`, s, v), nil)
}

// visible waits until the element sel selects (CSS) is visible.
func (d *dash) visible(t *testing.T, sel string) {
	t.Helper()
	d.run(t, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// until waits until the JavaScript expression is truthy.
func (d *dash) until(t *testing.T, expr string) {
	t.Helper()
	d.run(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(deadline))(ctx, tg)
		return err
	}))
}

// eval evaluates a JavaScript expression into out (nil: ignore the value).
func (d *dash) eval(t *testing.T, expr string, out any) {
	t.Helper()
	d.run(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		raw, err := chromedp.Evaluate[json.RawMessage](expr)(ctx, tg)
		if err != nil || out == nil {
			return err
		}
		return json.Unmarshal(raw, out)
	}))
}

// shot saves a screenshot of the viewport as <name>.png.
func (d *dash) shot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(d.tab, deadline)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(d.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot %s", p)
}

// call is an API request with a bearer token; it returns the status and
// decodes a JSON answer into out when out is not nil.
func (d *dash) call(t *testing.T, method, path, token string, body, out any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base()+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// submitPlan submits a plan for token's tenant and returns its id.
func (d *dash) submitPlan(t *testing.T, token, id string, steps ...map[string]any) string {
	t.Helper()
	var got gateway.SubmitResponse
	if st := d.call(t, http.MethodPost, "/v1/workflows", token, map[string]any{"workflow_id": id, "plan": map[string]any{"steps": steps}}, &got); st != http.StatusAccepted {
		t.Fatalf("submit %s: %d", id, st)
	}
	return got.WorkflowID
}

// sleepChain is a plan of n sleep steps of ms each, one after the other.
func sleepChain(n, ms int) []map[string]any {
	var steps []map[string]any
	for i := range n {
		st := map[string]any{"id": fmt.Sprintf("s%d", i), "capability": "sleep", "input": map[string]int{"ms": ms}}
		if i > 0 {
			st["depends_on"] = []string{fmt.Sprintf("s%d", i-1)}
		}
		steps = append(steps, st)
	}
	return steps
}

// headState is the workflow page's status pill.
const headState = `document.querySelector('.page-head .pill')?.dataset.state`

func TestDashboardCancel(t *testing.T) {
	d := startDash(t, stackOptions{}, acmeClient)
	id := d.submitPlan(t, acmeClient, "dash-cancel", sleepChain(3, 60_000)...)
	d.open(t, "/workflows/"+id, `[data-step="s0"][data-state="running"]`)
	d.click(t, `[data-action="cancel"]`)
	d.visible(t, `[data-action="confirm-cancel"]`)
	d.shot(t, "workflow-cancel-confirm")
	d.click(t, `[data-action="confirm-cancel"]`)
	d.until(t, headState+` === 'canceled'`)
	d.until(t, `window.__agentbus.log().types.at(-1) === 'cancelled'`)
	// No control is left on a finished workflow.
	d.until(t, `!document.querySelector('[data-action]')`)
	var st struct {
		Status string `json:"status"`
	}
	d.call(t, http.MethodGet, "/v1/workflows/"+id, acmeClient, nil, &st)
	if st.Status != "canceled" {
		t.Fatalf("status %q after cancel from the page", st.Status)
	}
	d.shot(t, "workflow-canceled")
}

func TestDashboardApprove(t *testing.T) {
	d := startDash(t, stackOptions{}, acmeClient)
	// The plan editor shows a schema problem at its pointer.
	d.open(t, "/submit", `[data-tab="plan"]`)
	d.click(t, `[data-tab="plan"]`)
	d.visible(t, `[data-testid="plan"]`)
	setPlan := func(plan string) { d.setInput(t, `[data-testid="plan"]`, plan) }
	setPlan(`{"steps": [{"id": "draft", "capability": "Echo"}]}`)
	d.visible(t, `[data-pointer="/plan/steps/0/capability"]`)
	var disabled bool
	d.eval(t, `document.querySelector('[data-testid="submit"]').disabled`, &disabled)
	if !disabled {
		t.Fatal("submit enabled with an invalid plan")
	}
	d.shot(t, "submit-plan-invalid")
	setPlan(`{"steps": [
  {"id": "draft", "capability": "echo", "input": {"text": "a draft"}},
  {"id": "review", "capability": "echo", "depends_on": ["draft"], "requires_approval": true},
  {"id": "publish", "capability": "echo", "depends_on": ["review"]}
]}`)
	d.until(t, `!document.querySelector('[data-testid="submit"]').disabled`)
	d.click(t, `[data-testid="submit"]`)
	d.visible(t, `[data-testid="approval"] [data-action="approve"][data-step="review"]`)
	d.visible(t, `[data-step="review"][data-state="awaiting"]`)
	var path string
	d.eval(t, `location.pathname`, &path)
	id := strings.TrimPrefix(path, "/workflows/")
	d.run(t, chromedp.SendKeys(chromedp.CSS(`[data-comment="review"]`), "looks right"))
	d.shot(t, "workflow-awaiting-approval")
	d.click(t, `[data-action="approve"][data-step="review"]`)
	d.until(t, headState+` === 'completed'`)
	d.visible(t, `[data-step="publish"][data-state="completed"]`)
	var st struct {
		Tasks map[string]struct {
			Approval struct {
				State   string `json:"state"`
				Comment string `json:"comment"`
			} `json:"approval"`
		} `json:"tasks"`
	}
	d.call(t, http.MethodGet, "/v1/workflows/"+id, acmeClient, nil, &st)
	if a := st.Tasks["review"].Approval; a.State != "approved" || a.Comment != "looks right" {
		t.Fatalf("approval recorded as %+v", a)
	}
	d.click(t, `[data-step="review"]`)
	d.visible(t, `[data-testid="detail"] .json`)
	d.shot(t, "workflow-approved")

	// Fork from the newest revision: a new workflow, its steps reused.
	d.click(t, `[data-testid="checkpoints"] li:first-child button`)
	d.until(t, fmt.Sprintf(`location.pathname.startsWith('/workflows/') && location.pathname !== %q`, path))
	d.until(t, `document.querySelector('.wf-id')?.textContent === decodeURIComponent(location.pathname.slice('/workflows/'.length)) && `+headState+` === 'completed'`)
	var forked string
	d.eval(t, `location.pathname`, &forked)
	t.Logf("forked %s into %s", id, strings.TrimPrefix(forked, "/workflows/"))
}
