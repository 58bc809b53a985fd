package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestDashboardSchedules: a schedule made with the form (after the API's
// problem with a bad cron is shown at its field) is listed; pausing it
// is a button; Run now starts a run that the schedule's runs list shows
// until it completes; a viewer sees the list without a button; delete
// asks first.
func TestDashboardSchedules(t *testing.T) {
	d := startDash(t, stackOptions{}, acmeClient)
	d.open(t, "/schedules", `[data-testid="schedules"] .empty`)
	d.click(t, `[data-action="new-schedule"]`)
	d.visible(t, `[data-testid="schedule-form"]`)
	d.setInput(t, `[data-field="id"]`, "nightly")
	d.setInput(t, `[data-field="cron"]`, "61 * * * *")
	d.click(t, `[data-tab="plan"]`)
	d.visible(t, `[data-field="plan"]`)
	d.click(t, `[data-action="create-schedule"]`)
	// The gateway's 400 names /cron: the page shows it beside the field.
	d.visible(t, `[data-testid="schedule-form"] .field-problem[data-pointer="/cron"]`)
	d.shot(t, "schedule-form-problem")
	d.setInput(t, `[data-field="cron"]`, "0 3 * * *")
	d.setInput(t, `[data-field="time_zone"]`, "Europe/Paris")
	d.run(t, sendKeys(`[data-field="jitter"]`, "5s"))
	d.run(t, sendKeys(`[data-field="catchup_window"]`, "2h"))
	d.click(t, `[data-action="create-schedule"]`)
	row := `[data-testid="schedules"] tr[data-id="nightly"]`
	d.visible(t, row+` [data-testid="sched-state"][data-state="active"]`)
	d.until(t, `!document.querySelector('[data-testid="schedule-form"]')`)
	var sp struct {
		Cron     string `json:"cron"`
		TimeZone string `json:"time_zone"`
		Jitter   string `json:"jitter"`
		Catchup  string `json:"catchup_window"`
		Paused   bool   `json:"paused"`
		Workflow struct {
			Plan struct {
				Steps []struct{ Capability string } `json:"steps"`
			} `json:"plan"`
		} `json:"workflow"`
	}
	if st := d.call(t, http.MethodGet, "/v1/schedules/nightly", acmeClient, nil, &sp); st != http.StatusOK ||
		sp.Cron != "0 3 * * *" || sp.TimeZone != "Europe/Paris" || sp.Jitter != "5s" || sp.Catchup != "2h" || len(sp.Workflow.Plan.Steps) != 1 {
		t.Fatalf("schedule as created from the form: %d %+v", st, sp)
	}

	d.click(t, row+` [data-action="pause"]`)
	d.visible(t, row+`[data-paused="true"] [data-action="unpause"]`)
	d.call(t, http.MethodGet, "/v1/schedules/nightly", acmeClient, nil, &sp)
	if !sp.Paused {
		t.Fatal("pause from the page left the schedule active")
	}
	// A manual trigger runs a paused schedule too.
	d.click(t, row+` [data-action="trigger"]`)
	d.visible(t, row+` [data-testid="triggered"] a`)
	var run string
	d.eval(t, `document.querySelector('[data-testid="triggered"] a').textContent`, &run)
	if !strings.HasPrefix(run, "nightly-manual-") {
		t.Fatalf("triggered run %q", run)
	}
	d.shot(t, "schedules")
	d.click(t, row+` [data-action="runs"]`)
	d.visible(t, `[data-testid="schedule-filter"]`)
	d.visible(t, `[data-testid="workflows"] tr[data-id="`+run+`"][data-status="completed"]`)
	var rows int
	d.eval(t, `document.querySelectorAll('[data-testid="workflows"] tbody tr[data-id]').length`, &rows)
	if rows != 1 {
		t.Fatalf("the schedule's runs list shows %d rows, want its one run", rows)
	}
	d.shot(t, "schedule-runs")

	// A viewer sees the list, read-only.
	d.setCookie(t, acmeViewer)
	d.open(t, "/schedules", row)
	d.visible(t, `[data-testid="read-only"]`)
	d.until(t, `!document.querySelector('[data-action="new-schedule"], [data-testid="schedules"] [data-action="pause"], [data-testid="schedules"] [data-action="unpause"], [data-testid="schedules"] [data-action="trigger"], [data-testid="schedules"] [data-action="delete"]')`)

	d.setCookie(t, acmeClient)
	d.open(t, "/schedules", row+` [data-action="delete"]`)
	d.click(t, row+` [data-action="delete"]`)
	d.click(t, row+` [data-action="confirm-delete"]`)
	d.until(t, `!document.querySelector('[data-testid="schedules"] tr[data-id="nightly"]')`)
	if st := d.call(t, http.MethodGet, "/v1/schedules/nightly", acmeClient, nil, nil); st != http.StatusNotFound {
		t.Fatalf("GET a schedule deleted from the page: %d", st)
	}
}

// TestDashboardBulkCancel: the Workflows page's bulk control cancels every
// workflow its filter matches (status chip and metadata), after a
// confirmation, and shows the API's counts.
func TestDashboardBulkCancel(t *testing.T) {
	d := startDash(t, stackOptions{}, acmeClient)
	submit := func(id, batch string) {
		body := map[string]any{"workflow_id": id, "metadata": map[string]string{"batch": batch}, "plan": map[string]any{"steps": sleepChain(1, 60_000)}}
		if st := d.call(t, http.MethodPost, "/v1/workflows", acmeClient, body, nil); st != http.StatusAccepted {
			t.Fatalf("submit %s: %d", id, st)
		}
	}
	submit("bulk-a", "b7")
	submit("bulk-b", "b7")
	submit("bulk-other", "b8")
	d.open(t, "/", `[data-testid="workflows"] tr[data-id="bulk-other"]`)
	d.click(t, `[data-filter="running"]`)
	d.click(t, `[data-action="bulk"]`)
	d.setInput(t, `[data-field="bulk-metadata"]`, "batch=b7")
	d.until(t, `document.querySelector('[data-testid="bulk-filter"]').textContent.includes('batch=b7')`)
	d.click(t, `[data-action="bulk-cancel"]`)
	d.visible(t, `[data-testid="bulk-confirm"]`)
	d.shot(t, "workflows-bulk-confirm")
	d.click(t, `[data-action="bulk-confirm"]`)
	d.visible(t, `[data-testid="bulk-result"][data-matched="2"][data-applied="2"]`)
	d.click(t, `[data-filter="canceled"]`)
	d.visible(t, `[data-testid="workflows"] tr[data-id="bulk-a"][data-status="canceled"]`)
	d.visible(t, `[data-testid="workflows"] tr[data-id="bulk-b"][data-status="canceled"]`)
	var st struct {
		Status string `json:"status"`
	}
	d.call(t, http.MethodGet, "/v1/workflows/bulk-other", acmeClient, nil, &st)
	if st.Status == "canceled" {
		t.Fatal("bulk cancel of batch=b7 canceled a workflow of batch b8")
	}
}
