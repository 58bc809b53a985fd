// Package datadir owns the exclusive lock on an agentbus data directory:
// one process at a time may open the JetStream store, the embedded search
// index and the journals under it.
//
// Acquire takes the lock with flock(2) on <dir>/agentbus.lock and writes the
// holder — pid, host, start time and command — into that file, so that a
// second process is refused at once with an *InUseError naming the holder.
// The lock belongs to the open file, not to the file's existence: it ends
// with Release or with the process, however the process ends (kill -9
// included), and a lock file left behind by a dead holder never blocks a
// restart. On systems without flock Acquire does not lock.
package datadir
