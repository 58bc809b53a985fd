package orchestrator

import "sync"

// keyLocks serialises the transitions of one workflow within this
// process, so that its replies arriving together do not fight over the
// checkpoint revision; across processes the revision check decides.
//
// One lock a workflow, not a fixed array of stripes shared by hash: a
// transition holds its lock across the checkpoint write and the outbox's
// publication (two round trips to the server), so two workflows sharing
// a stripe wait on each other for nothing. With 64 stripes and 16
// workflows in flight, BenchmarkWorkflowsParallel's mutex profile showed
// transitions waiting on other workflows' stripes for longer than the
// run itself.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	refs int // holders and waiters; guarded by keyLocks.mu
}

// lock takes the lock of key and returns its release.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyLock)
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
