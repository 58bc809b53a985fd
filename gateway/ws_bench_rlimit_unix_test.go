//go:build unix

package gateway_test

import (
	"syscall"
	"testing"
)

// raiseFileLimit raises the process's open-file limit to its hard limit:
// BenchmarkWSFanout's processes hold 10,000 sockets each.
func raiseFileLimit(tb testing.TB) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		tb.Logf("open-file limit: %v", err)
		return
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			tb.Logf("open-file limit: %v", err)
		}
	}
}
