//go:build !unix

package datadir

import "os"

// tryLock does not lock where flock is not available.
func tryLock(*os.File) (bool, error) { return true, nil }

func unlock(*os.File) {}
