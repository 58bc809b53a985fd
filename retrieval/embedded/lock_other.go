//go:build !unix

package embedded

// lockDir does not lock where flock is not available.
func lockDir(string) (func(), error) { return func() {}, nil }
