package schedule_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentbus/agentbus/schedule"
)

func TestCronNextPrev(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no zoneinfo:", err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		expr       string
		loc        *time.Location
		from       string
		next, prev string
	}{
		{"*/5 * * * *", time.UTC, "2026-03-01T10:07:30Z", "2026-03-01T10:10:00Z", "2026-03-01T10:05:00Z"},
		{"*/5 * * * *", time.UTC, "2026-03-01T10:05:00Z", "2026-03-01T10:10:00Z", "2026-03-01T10:00:00Z"},
		{"* * * * * *", time.UTC, "2026-03-01T10:05:00Z", "2026-03-01T10:05:01Z", "2026-03-01T10:04:59Z"},
		{"*/20 * * * * *", time.UTC, "2026-03-01T10:05:41Z", "2026-03-01T10:06:00Z", "2026-03-01T10:05:40Z"},
		{"0 9 * * mon-fri", time.UTC, "2026-03-06T10:00:00Z", "2026-03-09T09:00:00Z", "2026-03-06T09:00:00Z"}, // Fri → Mon
		{"@daily", time.UTC, "2026-12-31T12:00:00Z", "2027-01-01T00:00:00Z", "2026-12-31T00:00:00Z"},
		{"0 0 29 2 *", time.UTC, "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"30 8 * * *", paris, "2026-07-01T12:00:00Z", "2026-07-02T06:30:00Z", "2026-07-01T06:30:00Z"}, // CEST, UTC+2
		{"0 12 1,15 * *", time.UTC, "2026-01-10T00:00:00Z", "2026-01-15T12:00:00Z", "2026-01-01T12:00:00Z"},
	} {
		t.Run(tc.expr+"@"+tc.from, func(t *testing.T) {
			c, err := schedule.ParseCron(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if n, ok := c.Next(at(tc.from), tc.loc); !ok || !n.Equal(at(tc.next)) {
				t.Errorf("Next = %s, %v; want %s", n.UTC(), ok, tc.next)
			}
			if p, ok := c.Prev(at(tc.from), tc.loc); !ok || !p.Equal(at(tc.prev)) {
				t.Errorf("Prev = %s, %v; want %s", p.UTC(), ok, tc.prev)
			}
			// Prev undoes Next.
			n, _ := c.Next(at(tc.from), tc.loc)
			if n2, _ := c.Next(n, tc.loc); true {
				if p, _ := c.Prev(n2, tc.loc); !p.Equal(n) {
					t.Errorf("Prev(Next(Next)) = %s, want %s", p, n)
				}
			}
		})
	}
}

func TestParseCronErrors(t *testing.T) {
	for _, expr := range []string{"", "* * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 7",
		"a * * * *", "5-1 * * * *", "*/0 * * * *", "1-2-3 * * * *", "0 0 31 2 *", "* * * * * * *"} {
		if _, err := schedule.ParseCron(expr); !errors.Is(err, schedule.ErrCron) {
			t.Errorf("ParseCron(%q) = %v, want ErrCron", expr, err)
		}
	}
}

func TestSlotsAndSlotOf(t *testing.T) {
	sp := schedule.Spec{ScheduleID: "s", Every: "30s", Workflow: schedule.Template{Query: "q"}}
	tm, err := sp.Check()
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 500_000_000, time.UTC)
	slots, err := tm.Slots(from, from.Add(5*time.Minute))
	if err != nil || len(slots) != 10 || !slots[0].Equal(from.Truncate(time.Second).Add(time.Second)) {
		t.Fatalf("Slots = %v, %v", slots, err)
	}
	if s, err := tm.SlotOf("2026-01-01T00:01:00Z"); err != nil || !s.Equal(time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)) {
		t.Fatalf("SlotOf = %s, %v", s, err)
	}
	cron := schedule.Spec{ScheduleID: "s", Cron: "*/5 * * * *", Workflow: schedule.Template{Query: "q"}}
	ctm, _ := cron.Check()
	if s, err := ctm.SlotOf("2026-01-01T00:10:00Z"); err != nil || !s.Equal(time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)) {
		t.Fatalf("cron SlotOf = %s, %v", s, err)
	}
	d1, d2 := tm.Delay("s", from), tm.Delay("s", from)
	if d1 != d2 || d1 != 0 {
		t.Fatalf("no jitter: delays %s %s", d1, d2)
	}
	sp.Jitter = "10s"
	tm, _ = sp.Check()
	if d := tm.Delay("s", from); d < 0 || d >= 10*time.Second || d != tm.Delay("s", from) {
		t.Fatalf("jitter delay %s", d)
	}
}

func TestSpecCheckPointers(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec schedule.Spec
		want []string
	}{
		{"neither", schedule.Spec{ScheduleID: "a", Workflow: schedule.Template{Query: "q"}}, []string{""}},
		{"both", schedule.Spec{ScheduleID: "a", Cron: "* * * * *", Every: "1s", Workflow: schedule.Template{Query: "q"}}, []string{"/every"}},
		{"bad cron", schedule.Spec{ScheduleID: "a", Cron: "* * *", Workflow: schedule.Template{Query: "q"}}, []string{"/cron"}},
		{"short every", schedule.Spec{ScheduleID: "a", Every: "500ms", Workflow: schedule.Template{Query: "q"}}, []string{"/every"}},
		{"zone with every", schedule.Spec{ScheduleID: "a", Every: "1m", TimeZone: "Europe/Paris", Workflow: schedule.Template{Query: "q"}}, []string{"/time_zone"}},
		{"bad zone", schedule.Spec{ScheduleID: "a", Cron: "@daily", TimeZone: "Mars/Olympus", Workflow: schedule.Template{Query: "q"}}, []string{"/time_zone"}},
		{"bad jitter", schedule.Spec{ScheduleID: "a", Cron: "@daily", Jitter: "soon", Workflow: schedule.Template{Query: "q"}}, []string{"/jitter"}},
		{"bad catch-up window", schedule.Spec{ScheduleID: "a", Cron: "@daily", CatchupWindow: "9000h", Workflow: schedule.Template{Query: "q"}}, []string{"/catchup_window"}},
		{"long id", schedule.Spec{ScheduleID: "a123456789012345678901234567890123456789x", Cron: "@daily", Workflow: schedule.Template{Query: "q"}}, []string{"/schedule_id"}},
		{"no workflow", schedule.Spec{ScheduleID: "a", Cron: "@daily"}, []string{"/workflow"}},
		{"reserved metadata", schedule.Spec{ScheduleID: "a", Cron: "@daily", Workflow: schedule.Template{Query: "q", Metadata: map[string]string{"schedule_id": "x"}}}, []string{"/workflow/metadata/schedule_id"}},
		{"ok", schedule.Spec{ScheduleID: "a", Cron: "*/5 * * * *", TimeZone: "Europe/Paris", Jitter: "5s", CatchupWindow: "24h", Overlap: schedule.OverlapBufferOne, Workflow: schedule.Template{Query: "q"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.spec.Check()
			var ve interface{ Error() string }
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			ve = err
			if ve == nil {
				t.Fatalf("Check = nil, want problems at %q", tc.want)
			}
			got := pointers(err)
			if len(got) != len(tc.want) {
				t.Fatalf("problems at %q, want %q (%v)", got, tc.want, err)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("problems at %q, want %q (%v)", got, tc.want, err)
				}
			}
		})
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		o        schedule.Overlap
		running  bool
		buffered string
		want     schedule.Decision
	}{
		{schedule.OverlapSkip, false, "", schedule.Start},
		{schedule.OverlapSkip, true, "", schedule.Skip},
		{schedule.OverlapAllowAll, true, "", schedule.Start},
		{schedule.OverlapCancelPrevious, true, "", schedule.CancelThenStart},
		{schedule.OverlapCancelPrevious, false, "", schedule.Start},
		{schedule.OverlapBufferOne, true, "", schedule.Wait},
		{schedule.OverlapBufferOne, true, "run", schedule.Wait},
		{schedule.OverlapBufferOne, true, "other", schedule.Skip},
		{schedule.OverlapBufferOne, false, "other", schedule.Start},
	} {
		if got := schedule.Decide(tc.o, tc.running, tc.buffered, "run"); got != tc.want {
			t.Errorf("Decide(%s, running %v, buffered %q) = %s, want %s", tc.o, tc.running, tc.buffered, got, tc.want)
		}
	}
}

// TestMissed: the slots between the last fired one and this one that the
// catch-up window still covers, oldest first; none without a window.
func TestMissed(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	every, _ := schedule.Spec{ScheduleID: "a", Every: "1m", CatchupWindow: "5m", Workflow: schedule.Template{Query: "q"}}.Check()
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Minute))
		}
		return out
	}
	for _, tc := range []struct {
		name              string
		tm                schedule.Timing
		last, slot, armed time.Time
		want              []time.Time
	}{
		{"window covers five", every, t0.Add(2 * time.Minute), t0.Add(10 * time.Minute), t0, at(5, 6, 7, 8, 9)},
		{"nothing missed", every, t0.Add(9 * time.Minute), t0.Add(10 * time.Minute), t0, nil},
		{"last before the arming", every, t0.Add(-time.Hour), t0.Add(4 * time.Minute), t0.Add(time.Minute), at(2, 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.tm.Missed(tc.last, tc.slot, tc.armed, tc.slot)
			if !slices.EqualFunc(got, tc.want, time.Time.Equal) {
				t.Fatalf("Missed = %v, want %v", got, tc.want)
			}
		})
	}
	cron, _ := schedule.Spec{ScheduleID: "a", Cron: "*/15 * * * *", CatchupWindow: "1h", Workflow: schedule.Template{Query: "q"}}.Check()
	if got := cron.Missed(t0, t0.Add(2*time.Hour), t0, t0.Add(2*time.Hour)); !slices.EqualFunc(got, at(60, 75, 90, 105), time.Time.Equal) {
		t.Fatalf("cron Missed = %v", got)
	}
	none, _ := schedule.Spec{ScheduleID: "a", Every: "1m", Workflow: schedule.Template{Query: "q"}}.Check()
	if got := none.Missed(t0, t0.Add(time.Hour), t0, t0.Add(time.Hour)); got != nil {
		t.Fatalf("no window: Missed = %v", got)
	}
	second, _ := schedule.Spec{ScheduleID: "a", Every: "1s", CatchupWindow: "8760h", Workflow: schedule.Template{Query: "q"}}.Check()
	if got := second.Missed(t0, t0.Add(24*time.Hour), t0, t0.Add(24*time.Hour)); len(got) != schedule.MaxBackfill || !got[len(got)-1].Equal(t0.Add(24*time.Hour-time.Second)) {
		t.Fatalf("a long outage: %d slots, the last %v", len(got), got[len(got)-1])
	}
}
