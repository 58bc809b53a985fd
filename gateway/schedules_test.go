package gateway_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/gateway"
)

// problems returns the pointers (or names) of an error answer's problems.
func problems(t *testing.T, r reply) []string {
	t.Helper()
	var e apiErr
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("error body %s: %v", r.Body, err)
	}
	var out []string
	for _, p := range e.Error.Problems {
		out = append(out, p.Pointer+p.Name)
	}
	return out
}

func TestSchedulesValidation(t *testing.T) {
	s := startStack(t, withTokens)
	auth := bearer(acmeToken)
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"no workflow", `{"schedule_id":"a","every":"30s"}`, []string{"/workflow"}},
		{"unknown field", `{"schedule_id":"a","every":"30s","workflow":{"query":"q"},"tenant":"x"}`, []string{"/tenant"}},
		{"bad id", `{"schedule_id":"A.b","every":"30s","workflow":{"query":"q"}}`, []string{"/schedule_id"}},
		{"bad overlap", `{"schedule_id":"a","every":"30s","overlap":"queue","workflow":{"query":"q"}}`, []string{"/overlap"}},
		{"neither cron nor every", `{"schedule_id":"a","workflow":{"query":"q"}}`, []string{""}},
		{"both", `{"schedule_id":"a","cron":"* * * * *","every":"30s","workflow":{"query":"q"}}`, []string{"/every"}},
		{"bad cron", `{"schedule_id":"a","cron":"*/5 * * *","workflow":{"query":"q"}}`, []string{"/cron"}},
		{"bad every", `{"schedule_id":"a","every":"fortnightly","workflow":{"query":"q"}}`, []string{"/every"}},
		{"sub-second every", `{"schedule_id":"a","every":"100ms","workflow":{"query":"q"}}`, []string{"/every"}},
		{"bad zone", `{"schedule_id":"a","cron":"@daily","time_zone":"Nowhere/City","workflow":{"query":"q"}}`, []string{"/time_zone"}},
		{"zone with every", `{"schedule_id":"a","every":"1m","time_zone":"UTC","workflow":{"query":"q"}}`, []string{"/time_zone"}},
		{"bad jitter", `{"schedule_id":"a","every":"1m","jitter":"-1s","workflow":{"query":"q"}}`, []string{"/jitter"}},
		{"bad catch-up window", `{"schedule_id":"a","every":"1m","catchup_window":"a year","workflow":{"query":"q"}}`, []string{"/catchup_window"}},
		{"reserved metadata", `{"schedule_id":"a","every":"1m","workflow":{"query":"q","metadata":{"schedule_id":"b"}}}`, []string{"/workflow/metadata/schedule_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodPost, "/v1/schedules", []byte(tc.body), auth...)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("status %d %s, want 400", r.Status, r.Body)
			}
			if got := problems(t, r); !slices.Equal(got, tc.want) {
				t.Fatalf("problems at %q, want %q (%s)", got, tc.want, r.Body)
			}
		})
	}
}

func TestSchedulesAPI(t *testing.T) {
	s := startStack(t, withTokens)
	auth := bearer(acmeToken)
	body := `{"schedule_id":"nightly","cron":"0 3 * * *","time_zone":"Europe/Paris","overlap":"allow_all","workflow":{"query":"hello","metadata":{"team":"ops"}}}`
	r := s.mustDo(t, http.MethodPost, "/v1/schedules", []byte(body), auth...)
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var got gateway.ScheduleResponse
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if got.NextFireAt == nil || got.NextFireAt.In(mustZone(t, "Europe/Paris")).Hour() != 3 || got.Overlap != "allow_all" {
		t.Fatalf("created %s", r.Body)
	}
	if r := s.mustDo(t, http.MethodPost, "/v1/schedules", []byte(body), auth...); r.Status != http.StatusConflict {
		t.Fatalf("second create: %d %s, want 409", r.Status, r.Body)
	}
	// A viewer reads, never writes; another tenant sees nothing.
	if r := s.mustDo(t, http.MethodGet, "/v1/schedules/nightly", nil, bearer(viewerToken)...); r.Status != http.StatusOK {
		t.Fatalf("viewer GET: %d %s", r.Status, r.Body)
	}
	if r := s.mustDo(t, http.MethodPost, "/v1/schedules/nightly/trigger", nil, bearer(viewerToken)...); r.Status != http.StatusForbidden {
		t.Fatalf("viewer trigger: %d %s, want 403", r.Status, r.Body)
	}
	if r := s.mustDo(t, http.MethodGet, "/v1/schedules/nightly", nil, bearer(globexToken)...); r.Status != http.StatusNotFound {
		t.Fatalf("other tenant GET: %d %s, want 404", r.Status, r.Body)
	}
	// Pause, patch.
	r = s.mustDo(t, http.MethodPost, "/v1/schedules/nightly/pause", nil, auth...)
	got = gateway.ScheduleResponse{}
	if err := json.Unmarshal(r.Body, &got); err != nil || !got.Paused || got.NextFireAt != nil {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	r = s.mustDo(t, http.MethodPatch, "/v1/schedules/nightly", []byte(`{"cron":"","every":"1h","time_zone":"","paused":false}`), auth...)
	got = gateway.ScheduleResponse{}
	if err := json.Unmarshal(r.Body, &got); err != nil || r.Status != http.StatusOK || got.Every != "1h" || got.Cron != "" || got.Paused || got.Generation != 2 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	if r := s.mustDo(t, http.MethodPatch, "/v1/schedules/nightly", []byte(`{"cron":"* * *"}`), auth...); r.Status != http.StatusBadRequest {
		t.Fatalf("bad patch: %d %s", r.Status, r.Body)
	}
	// Trigger, then list the schedule's runs.
	r = s.mustDo(t, http.MethodPost, "/v1/schedules/nightly/trigger", nil, auth...)
	var tr gateway.TriggerResponse
	if err := json.Unmarshal(r.Body, &tr); err != nil || r.Status != http.StatusAccepted || !strings.HasPrefix(tr.WorkflowID, "nightly-manual-") {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	// Backfill three past hours.
	from := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Hour)
	bf, _ := json.Marshal(map[string]any{"from": from, "to": from.Add(2 * time.Hour)})
	r = s.mustDo(t, http.MethodPost, "/v1/schedules/nightly/backfill", bf, auth...)
	var br gateway.BackfillResponse
	if err := json.Unmarshal(r.Body, &br); err != nil || r.Status != http.StatusAccepted || len(br.WorkflowIDs) != 3 {
		t.Fatalf("backfill: %d %s", r.Status, r.Body)
	}
	future, _ := json.Marshal(map[string]any{"from": from, "to": time.Now().Add(time.Hour)})
	if r := s.mustDo(t, http.MethodPost, "/v1/schedules/nightly/backfill", future, auth...); r.Status != http.StatusBadRequest {
		t.Fatalf("backfill into the future: %d %s", r.Status, r.Body)
	}
	want := append([]string{tr.WorkflowID}, br.WorkflowIDs...)
	deadlineAt := time.Now().Add(deadline)
	for {
		r = s.mustDo(t, http.MethodGet, "/v1/workflows?schedule_id=nightly", nil, auth...)
		var list struct {
			Workflows []struct {
				WorkflowID string `json:"workflow_id"`
				Status     string `json:"status"`
			} `json:"workflows"`
		}
		_ = json.Unmarshal(r.Body, &list)
		var ids []string
		for _, w := range list.Workflows {
			if w.Status == "completed" {
				ids = append(ids, w.WorkflowID)
			}
		}
		slices.Sort(ids)
		slices.Sort(want)
		if slices.Equal(ids, want) {
			break
		}
		if time.Now().After(deadlineAt) {
			t.Fatalf("runs listed %q, want %q completed", ids, want)
		}
		<-time.After(50 * time.Millisecond)
	}
	if r := s.mustDo(t, http.MethodGet, "/v1/workflows?schedule_id=Bad.Id", nil, auth...); r.Status != http.StatusBadRequest {
		t.Fatalf("bad schedule_id filter: %d", r.Status)
	}
	r = s.mustDo(t, http.MethodGet, "/v1/schedules", nil, auth...)
	var all struct{ Schedules []gateway.ScheduleResponse }
	if err := json.Unmarshal(r.Body, &all); err != nil || len(all.Schedules) != 1 || all.Schedules[0].State.Started != 4 {
		t.Fatalf("list: %s", r.Body)
	}
	if r := s.mustDo(t, http.MethodDelete, "/v1/schedules/nightly", nil, auth...); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := s.mustDo(t, http.MethodGet, "/v1/schedules/nightly", nil, auth...); r.Status != http.StatusNotFound {
		t.Fatalf("GET after delete: %d", r.Status)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Skip(err)
	}
	return l
}
