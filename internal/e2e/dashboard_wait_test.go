package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardPauseAndSignal: a workflow waiting for a signal shows a
// form for it; pause and unpause are buttons; the signal's JSON body,
// sent from the page, is the wait step's output.
func TestDashboardPauseAndSignal(t *testing.T) {
	d := startDash(t, stackOptions{}, acmeClient)
	id := d.submitPlan(t, acmeClient, "dash-signal",
		map[string]any{"id": "gate", "capability": "wait", "input": map[string]string{"signal": "go"}},
		map[string]any{"id": "after", "capability": "echo", "depends_on": []string{"gate"}})
	d.open(t, "/workflows/"+id, `[data-testid="signals"] [data-action="signal"][data-signal="go"]`)
	d.click(t, `[data-action="pause"]`)
	d.visible(t, `[data-action="unpause"]`)
	d.run(t, chromedp.SendKeys(chromedp.CSS(`[data-signal-body="go"]`), `{"ok": true}`))
	d.shot(t, "workflow-signal")
	d.click(t, `[data-action="signal"][data-signal="go"]`)
	d.visible(t, `[data-step="gate"][data-state="completed"]`)
	d.click(t, `[data-action="unpause"]`)
	d.until(t, headState+` === 'completed'`)
	var st struct {
		Tasks map[string]struct {
			Output json.RawMessage `json:"output"`
		} `json:"tasks"`
	}
	d.call(t, http.MethodGet, "/v1/workflows/"+id, acmeClient, nil, &st)
	var out bytes.Buffer
	_ = json.Compact(&out, st.Tasks["gate"].Output)
	if out.String() != `{"ok":true}` {
		t.Fatalf("gate output %s", st.Tasks["gate"].Output)
	}
}
