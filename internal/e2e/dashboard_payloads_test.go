package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/permissions"
)

// TestDashboardPayloadDownload: a step output above the worker's payload
// threshold is a reference on the page — its size and type, never its
// bytes — and its link, authenticated by the token cookie as every call of
// the page is, saves the bytes whose SHA-256 the reference names.
func TestDashboardPayloadDownload(t *testing.T) {
	d := startDash(t, stackOptions{worker: func(c *agents.WorkerConfig) { c.PayloadThreshold = 4096 }}, acmeClient)
	text := strings.Repeat("large payload ", 800) // ~11 KiB of echo output
	id := d.submitPlan(t, acmeClient, "dash-payload", map[string]any{"id": "big", "capability": "echo", "input": map[string]string{"text": text}})
	d.open(t, "/workflows/"+id, `[data-step="big"]`)
	d.until(t, headState+` === 'completed'`)

	var st struct {
		Tasks map[string]struct {
			Output json.RawMessage `json:"output"`
		} `json:"tasks"`
	}
	d.call(t, http.MethodGet, "/v1/workflows/"+id, acmeClient, nil, &st)
	var ref struct {
		Ref struct {
			Key    string `json:"key"`
			Size   int64  `json:"size"`
			SHA256 string `json:"sha256"`
		} `json:"$agentbus_ref"`
	}
	if err := json.Unmarshal(st.Tasks["big"].Output, &ref); err != nil || ref.Ref.Key == "" {
		t.Fatalf("output of big is not a reference (threshold 4096): %.200s", st.Tasks["big"].Output)
	}

	// The step's output, which comes with its completed status, is listed
	// among the artifacts, as its reference.
	d.until(t, `[...document.querySelectorAll('.artifacts details')].some((e) => e.querySelector('summary').textContent.includes('echo output') && !!e.querySelector('[data-testid="payload-ref"]'))`)

	d.click(t, `[data-step="big"]`)
	link := `[data-testid="detail"] [data-testid="payload-ref"] [data-action="download"]`
	d.visible(t, link)
	// The output is shown as its reference, not as text.
	var shown string
	d.eval(t, `document.querySelector('[data-testid="detail"] [data-testid="payload-ref"]').closest('figure').textContent`, &shown)
	if strings.Contains(shown, "large payload large payload") || !strings.Contains(shown, "application/json") || !strings.Contains(shown, "KiB") {
		t.Fatalf("the output figure shows %q", shown)
	}
	var href string
	d.eval(t, `document.querySelector('`+link+`').getAttribute('href')`, &href)
	if want := "/v1/workflows/" + id + "/payloads/" + strings.TrimPrefix(ref.Ref.Key, "acme/"+id+"/") + "?download=1"; href != want {
		t.Fatalf("download link %q, want %q", href, want)
	}
	d.shot(t, "workflow-payload-ref")

	// Click it: the browser saves the payload.
	dir := t.TempDir()
	done := make(chan *cdpbrowser.EventDownloadProgress, 1)
	if err := chromedp.Listen(d.tab, func(ev any) {
		if e, ok := ev.(*cdpbrowser.EventDownloadProgress); ok && (e.State == cdpbrowser.DownloadProgressStateCompleted || e.State == cdpbrowser.DownloadProgressStateCanceled) {
			select {
			case done <- e:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	on := true
	d.run(t, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &on})
		return err
	}))
	d.click(t, link)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var ev *cdpbrowser.EventDownloadProgress
	select {
	case ev = <-done:
	case <-ctx.Done():
		t.Fatal("no download completed after clicking the link")
	}
	if ev.State != cdpbrowser.DownloadProgressStateCompleted {
		t.Fatalf("download %s", ev.State)
	}
	file := ev.FilePath
	if file == "" {
		file = filepath.Join(dir, ev.GUID)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if int64(len(b)) != ref.Ref.Size || hex.EncodeToString(sum[:]) != ref.Ref.SHA256 || !strings.Contains(string(b), "large payload") {
		t.Fatalf("downloaded %d bytes (sha256 %x), the reference names %d bytes, sha256 %s", len(b), sum, ref.Ref.Size, ref.Ref.SHA256)
	}
}

// TestDashboardToolConfirmation: a step that the tool permissions hold
// for a confirmation shows, beside Approve and Reject, its tool, the rule
// and the input it would run with; approving runs it.
func TestDashboardToolConfirmation(t *testing.T) {
	table := permissions.Table{"acme": {"client": {RequiresConfirmation: []string{"ech?"}}}}
	d := startDash(t, stackOptions{orchestrator: func(c *orchestrator.Config) { c.Permissions = table }}, acmeClient)
	id := d.submitPlan(t, acmeClient, "dash-confirm", map[string]any{"id": "rm", "capability": "echo", "input": map[string]any{"path": "/tmp/old", "recursive": true}})
	d.open(t, "/workflows/"+id, `[data-testid="approval"] [data-testid="confirm"][data-step="rm"]`)
	var got struct {
		Capability, Rule, Input string
	}
	d.eval(t, `(() => { const c = document.querySelector('[data-testid="confirm"][data-step="rm"]');
		return {Capability: c.querySelector('[data-testid="confirm-capability"]').textContent,
			Rule: c.querySelector('[data-testid="confirm-rule"]').textContent,
			Input: c.querySelector('[data-testid="confirm-input"]').textContent} })()`, &got)
	var input map[string]any
	if err := json.Unmarshal([]byte(got.Input), &input); err != nil || input["path"] != "/tmp/old" || !strings.Contains(got.Input, "\n  ") {
		t.Fatalf("confirm input shown as %q (want pretty JSON): %v", got.Input, err)
	}
	if got.Capability != "echo" || !strings.Contains(got.Rule, "ech?") {
		t.Fatalf("confirm shows capability %q, rule %q", got.Capability, got.Rule)
	}
	d.shot(t, "workflow-tool-confirmation")
	// Opened afresh, the page has the confirmation from the checkpoint
	// even if it never saw the event (the same fields).
	d.open(t, "/workflows/"+id, `[data-testid="confirm"][data-step="rm"] [data-testid="confirm-rule"]`)
	d.click(t, `[data-action="approve"][data-step="rm"]`)
	d.until(t, headState+` === 'completed'`)
	d.until(t, `!document.querySelector('[data-testid="confirm"]')`)
}
