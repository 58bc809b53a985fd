//go:build !unix

package gateway_test

import "testing"

// raiseFileLimit does nothing where there is no setrlimit.
func raiseFileLimit(testing.TB) {}
