package entities

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// now is a Wednesday.
var now = time.Date(2024, 6, 12, 15, 4, 5, 0, time.UTC)

func TestExtract(t *testing.T) {
	tests := []struct {
		query    string
		entities []string // "TYPE text@start"
		ranges   []string // "text from..to grain", dates as 2006-01-02
		dominant []string
	}{
		{
			query:    "OpenAI news from San Francisco last week",
			entities: []string{"ORG OpenAI@0", "PLACE San Francisco@17", "DATE last week@31"},
			ranges:   []string{"last week 2024-06-03..2024-06-09 week"},
			dominant: []string{"DATE", "ORG", "PLACE"},
		},
		{
			query:    "What did the European Union decide between March and May 2024?",
			entities: []string{"ORG European Union@13", "DATE between March and May 2024@35"},
			ranges:   []string{"between March and May 2024 2024-03-01..2024-05-31 month"},
			dominant: []string{"DATE", "ORG"},
		},
		{
			query:    "Kubernetes 1.30 release notes since March",
			entities: []string{"PRODUCT Kubernetes 1.30@0", "DATE since March@30"},
			ranges:   []string{"since March 2024-03-01..2024-06-12 month"},
			dominant: []string{"DATE", "PRODUCT"},
		},
		{
			query:    "Ada Lovelace and Charles Babbage in 2023",
			entities: []string{"PERSON Ada Lovelace@0", "PERSON Charles Babbage@17", "DATE in 2023@33"},
			ranges:   []string{"in 2023 2023-01-01..2023-12-31 year"},
			dominant: []string{"PERSON", "DATE"},
		},
		{
			query:    "sales in Q1 2024 grew 12% to $1,200 million",
			entities: []string{"DATE Q1 2024@9", "NUMBER 12%@22", "NUMBER $1,200 million@29"},
			ranges:   []string{"Q1 2024 2024-01-01..2024-03-31 quarter"},
			dominant: []string{"NUMBER", "DATE"},
		},
		{
			query:    "incidents on 2024-03-05 and March 5, 2024",
			entities: []string{"DATE 2024-03-05@13", "DATE March 5, 2024@28"},
			ranges:   []string{"2024-03-05 2024-03-05..2024-03-05 day", "March 5, 2024 2024-03-05..2024-03-05 day"},
			dominant: []string{"DATE"},
		},
		{
			query:    "errors in the past 3 days",
			entities: []string{"DATE past 3 days@14"},
			ranges:   []string{"past 3 days 2024-06-10..2024-06-12 day"},
			dominant: []string{"DATE"},
		},
		{
			query:    "reports from yesterday and today",
			entities: []string{"DATE yesterday@13", "DATE today@27"},
			ranges:   []string{"yesterday 2024-06-11..2024-06-11 day", "today 2024-06-12..2024-06-12 day"},
			dominant: []string{"DATE"},
		},
		{
			query:    "how does Raft compare to Paxos this month",
			entities: []string{"CONCEPT Raft@9", "CONCEPT Paxos@25", "DATE this month@31"},
			ranges:   []string{"this month 2024-06-01..2024-06-30 month"},
			dominant: []string{"CONCEPT", "DATE"},
		},
		{
			query:    "University of Oxford research last year",
			entities: []string{"ORG University of Oxford@0", "DATE last year@30"},
			ranges:   []string{"last year 2023-01-01..2023-12-31 year"},
			dominant: []string{"DATE", "ORG"},
		},
		{
			query:    "Google Cloud pricing last month",
			entities: []string{"PRODUCT Google Cloud@0", "DATE last month@21"},
			ranges:   []string{"last month 2024-05-01..2024-05-31 month"},
			dominant: []string{"DATE", "PRODUCT"},
		},
		{
			query:    "iPhone 15 vs Windows 11 in Paris",
			entities: []string{"PRODUCT iPhone 15@0", "PRODUCT Windows 11@13", "PLACE Paris@27"},
			dominant: []string{"PRODUCT", "PLACE"},
		},
		{
			query:    "Tell me about the Paris Agreement",
			entities: []string{"EVENT Paris Agreement@18"},
			dominant: []string{"EVENT"},
		},
		{
			// Ambiguous gazetteer names count only when capitalised.
			query: "apple pie recipes from turkey",
		},
		{
			query:    "Bank of America, Acme Corp and Golden Gate Bridge",
			entities: []string{"ORG Bank of America@0", "ORG Acme Corp@17", "PLACE Golden Gate Bridge@31"},
			dominant: []string{"ORG", "PLACE"},
		},
		{
			query:    "machine learning papers since 2020",
			entities: []string{"CONCEPT machine learning@0", "DATE since 2020@24"},
			ranges:   []string{"since 2020 2020-01-01..2024-06-12 year"},
			dominant: []string{"DATE", "CONCEPT"},
		},
		{
			// "next month" of December is January of the next year;
			// an invalid date is not a date.
			query:    "events 2023-02-30 in December and next quarter",
			entities: []string{"DATE in December@18", "DATE next quarter@34"},
			ranges:   []string{"in December 2023-12-01..2023-12-31 month", "next quarter 2024-07-01..2024-09-30 quarter"},
			dominant: []string{"DATE"},
		},
		{
			query:    "Who is Grace Hopper",
			entities: []string{"PERSON Grace Hopper@7"},
			dominant: []string{"PERSON"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			out := Extract(tt.query, now)
			var got []string
			for _, e := range out.Entities {
				got = append(got, fmt.Sprintf("%s %s@%d", e.Type, e.Text, e.Start))
				if tt.query[e.Start:e.End] != e.Text {
					t.Errorf("entity %q: query[%d:%d] = %q", e.Text, e.Start, e.End, tt.query[e.Start:e.End])
				}
				if e.Confidence <= 0 || e.Confidence > 1 || !strings.Contains(e.Context, e.Text) {
					t.Errorf("entity %+v: bad confidence or context", e)
				}
			}
			if !slices.Equal(got, tt.entities) {
				t.Errorf("entities = %q, want %q", got, tt.entities)
			}
			var ranges []string
			for _, r := range out.TimeRanges {
				if !r.To.Equal(endOfDay(r.To)) || !r.From.Equal(startOfDay(r.From)) {
					t.Errorf("range %+v does not run from a day's start to a day's last second", r)
				}
				ranges = append(ranges, fmt.Sprintf("%s %s..%s %s", r.Text, r.From.Format(time.DateOnly), r.To.Format(time.DateOnly), r.Grain))
			}
			if !slices.Equal(ranges, tt.ranges) {
				t.Errorf("ranges = %q, want %q", ranges, tt.ranges)
			}
			if !slices.Equal(out.DominantTypes, tt.dominant) && len(out.DominantTypes)+len(tt.dominant) > 0 {
				t.Errorf("dominant = %q, want %q", out.DominantTypes, tt.dominant)
			}
		})
	}
}

func TestFiltersSpanEveryRange(t *testing.T) {
	out := Extract("between January and February 2024 or yesterday", now)
	if out.Filters == nil {
		t.Fatal("no filters")
	}
	want := [2]string{"2024-01-01T00:00:00Z", "2024-06-11T23:59:59Z"}
	if got := [2]string{out.Filters.From.Format(time.RFC3339), out.Filters.To.Format(time.RFC3339)}; got != want {
		t.Fatalf("filters = %q, want %q", got, want)
	}
	if Extract("no dates here", now).Filters != nil {
		t.Fatal("filters without a time range")
	}
}

func TestCalendarPeriods(t *testing.T) {
	sunday := time.Date(2024, 6, 16, 23, 0, 0, 0, time.UTC)
	jan := time.Date(2025, 1, 3, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		now         time.Time
		query, want string
	}{
		{sunday, "this week", "2024-06-10..2024-06-16"},
		{sunday, "last week", "2024-06-03..2024-06-09"},
		{jan, "last month", "2024-12-01..2024-12-31"},
		{jan, "last quarter", "2024-10-01..2024-12-31"},
		{jan, "since March", "2024-03-01..2025-01-03"},
		{jan, "between November and February", "2024-11-01..2025-02-28"},
		{jan, "past 2 weeks", "2024-12-21..2025-01-03"},
		{jan, "past month", "2024-12-04..2025-01-03"},
		{jan, "2024 Q4", "2024-10-01..2024-12-31"},
		{jan, "5 March 2023", "2023-03-05..2023-03-05"},
		{jan, "Feb 2024", "2024-02-01..2024-02-29"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			rs := Extract(tt.query, tt.now).TimeRanges
			if len(rs) != 1 {
				t.Fatalf("ranges = %+v, want one", rs)
			}
			if got := rs[0].From.Format(time.DateOnly) + ".." + rs[0].To.Format(time.DateOnly); got != tt.want {
				t.Fatalf("%q = %s, want %s", tt.query, got, tt.want)
			}
		})
	}
}

func TestExtractKeepsNowsLocation(t *testing.T) {
	loc := time.FixedZone("UTC+9", 9*3600)
	rs := Extract("today", time.Date(2024, 6, 12, 1, 0, 0, 0, loc)).TimeRanges
	if len(rs) != 1 || rs[0].From.Format(time.RFC3339) != "2024-06-12T00:00:00+09:00" {
		t.Fatalf("ranges = %+v", rs)
	}
}
