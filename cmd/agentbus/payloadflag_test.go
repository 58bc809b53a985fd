package main

import "testing"

func TestPayloadThresholdFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		str  string
	}{
		{"256KiB", 256 << 10, "256KiB"}, {"1MiB", 1 << 20, "1MiB"}, {"65536", 64 << 10, "64KiB"},
		{"3000", 3000, "3000"}, {"512k", 512 << 10, "512KiB"}, {"off", -1, "off"},
	} {
		var p payloadThreshold
		if err := p.Set(tc.in); err != nil || int(p) != tc.want || p.String() != tc.str {
			t.Errorf("Set(%q) = %d %q, %v; want %d %q", tc.in, int(p), p.String(), err, tc.want, tc.str)
		}
	}
	for _, bad := range []string{"", "big", "-5", "0", "1.5MiB"} {
		var p payloadThreshold
		if err := p.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}
