package workflow_test

import (
	"math/rand/v2"
	"testing"
)

// FuzzApply drives the engine with input sequences drawn from the fuzzer's
// bytes: each 8 bytes seed one draw of the property test's generator, so
// the fuzzer explores orders and redeliveries the seeds did not. The
// invariants are the property test's.
func FuzzApply(f *testing.F) {
	f.Add([]byte("agentbus workflow engine: a seed of forty bytes or so."))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newRun(t)
		for len(data) >= 8 {
			var seed uint64
			for _, b := range data[:8] {
				seed = seed<<8 | uint64(b)
			}
			data = data[8:]
			r.step(r.next(rand.New(rand.NewPCG(seed, 0))))
		}
	})
}
