package retrieval

import "testing"

func TestDefinedBy(t *testing.T) {
	for _, tt := range []struct {
		title string
		syms  []string
		want  bool
	}{
		{"package sync (sync) › type RWMutex", []string{"RWMutex"}, true},
		{"package sync (sync) › type RWMutex › func (*RWMutex) RLock", []string{"RWMutex"}, false},
		{"package sync (sync) › type RWMutex › func (*RWMutex) RLock", []string{"RWMutex", "RLock"}, true},
		{"package io (io) › func ReadAll", []string{"ReadAll"}, true},
		{"package slices (slices) › func Sort[S ~[]E, E cmp.Ordered]", []string{"Sort"}, true},
		{"package sync (sync) › type Mutex", []string{"RWMutex"}, false},
	} {
		if got := definedBy(tt.title, tt.syms); got != tt.want {
			t.Errorf("definedBy(%q, %v) = %v, want %v", tt.title, tt.syms, got, tt.want)
		}
	}
}
