package main

import (
	"github.com/agentbus/agentbus/internal/datadir"
)

// lockData takes the exclusive lock on the data directory dir for the
// command's life, before anything under it is opened: a second process on
// the same directory (two serves corrupt the JetStream store) fails at once
// with exit status 3 and the holder's pid, host and start time.
func lockData(dir, command string) (release func(), err error) {
	l, err := datadir.Acquire(dir, "agentbus "+command)
	if err != nil {
		return nil, &exitError{code: exitUsage, msg: err.Error()}
	}
	return l.Release, nil
}
