// Package retrievaltest is the conformance suite every retrieval.Backend
// must pass: tenant isolation, replace-by-ID, BM25 and vector ranking, K,
// filters, error sentinels, counts and concurrent use. A backend's test
// calls Run with a constructor of fresh, empty backends:
//
//	func TestConformance(t *testing.T) {
//		retrievaltest.Run(t, func(t *testing.T) retrieval.Backend {
//			b, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { b.Close() })
//			return b
//		})
//	}
//
// The corpora are a few short English sentences each, so that a fake
// server standing in for an external engine can satisfy the suite too: it
// is about backend semantics, not ranking quality.
package retrievaltest
