package retrieval

import (
	"testing"
	"time"
)

func TestFiltersMatch(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2024, 2, d, 0, 0, 0, 0, time.UTC) }
	meta := map[string]any{"team": "red", "year": float64(2024), "draft": true}
	tests := []struct {
		name string
		f    Filters
		date time.Time
		meta map[string]any
		want bool
	}{
		{"zero filter, no date", Filters{}, time.Time{}, nil, true},
		{"zero filter, dated", Filters{}, day(3), meta, true},
		{"from, undated", Filters{From: day(1)}, time.Time{}, nil, false},
		{"to, undated", Filters{To: day(1)}, time.Time{}, nil, false},
		{"from inclusive", Filters{From: day(3)}, day(3), nil, true},
		{"before from", Filters{From: day(3)}, day(2), nil, false},
		{"to inclusive", Filters{To: day(3)}, day(3), nil, true},
		{"after to", Filters{To: day(3)}, day(4), nil, false},
		{"inside range", Filters{From: day(1), To: day(5)}, day(3), nil, true},
		{"outside range", Filters{From: day(1), To: day(5)}, day(6), nil, false},
		{"metadata string", Filters{Metadata: map[string]string{"team": "red"}}, time.Time{}, meta, true},
		{"metadata other value", Filters{Metadata: map[string]string{"team": "blue"}}, time.Time{}, meta, false},
		{"metadata missing key", Filters{Metadata: map[string]string{"owner": "x"}}, time.Time{}, meta, false},
		{"metadata nil map", Filters{Metadata: map[string]string{"team": "red"}}, time.Time{}, nil, false},
		{"metadata number", Filters{Metadata: map[string]string{"year": "2024"}}, time.Time{}, meta, true},
		{"metadata bool", Filters{Metadata: map[string]string{"draft": "true"}}, time.Time{}, meta, true},
		{"metadata all keys", Filters{Metadata: map[string]string{"team": "red", "draft": "false"}}, time.Time{}, meta, false},
		{"date and metadata", Filters{From: day(1), Metadata: map[string]string{"team": "red"}}, day(2), meta, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Match(tt.date, tt.meta); got != tt.want {
				t.Errorf("Match(%v, %v) with %+v = %v, want %v", tt.date, tt.meta, tt.f, got, tt.want)
			}
		})
	}
}

func TestFiltersIsZero(t *testing.T) {
	if !(Filters{}).IsZero() {
		t.Error("zero Filters is not IsZero")
	}
	for _, f := range []Filters{{From: time.Now()}, {To: time.Now()}, {Metadata: map[string]string{"a": "b"}}} {
		if f.IsZero() {
			t.Errorf("%+v reports IsZero", f)
		}
	}
}
