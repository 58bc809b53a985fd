package embedded

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStoreLog: a tenant's chunks are the store with the log's batches
// over it, in order, later records replacing earlier ones by ID; a torn
// last frame (a crash in the middle of an append) is ignored; writing the
// store drops the log.
func TestStoreLog(t *testing.T) {
	dir := t.TempDir()
	rec := func(id, text string) record { return record{ID: id, DocID: id, Text: text} }
	if err := saveStore(dir, storeFile{Version: storeFormat, Embedder: "e1", NextGen: 3,
		Records: []record{rec("a", "a0"), rec("b", "b0")}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []logEntry{
		{Embedder: "e1", NextGen: 5, Records: []record{rec("b", "b1"), rec("c", "c1")}},
		{Embedder: "e2", NextGen: 4, Records: []record{rec("c", "c2")}},
	} {
		if err := appendLog(dir, e); err != nil {
			t.Fatal(err)
		}
	}
	// A torn frame: its length promises more than was written.
	f, err := os.OpenFile(filepath.Join(dir, logName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte{0, 0, 1, 0, 'x', 'y'})
	_ = f.Close()

	s, logged, err := loadStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range s.Records {
		got[r.ID] = r.Text
	}
	want := map[string]string{"a": "a0", "b": "b1", "c": "c2"}
	if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] || got["c"] != want["c"] {
		t.Fatalf("records %v, want %v", got, want)
	}
	if logged != 2 || s.NextGen != 5 || s.Embedder != "e2" {
		t.Fatalf("logged %d, next gen %d, embedder %q; want 2, 5, e2", logged, s.NextGen, s.Embedder)
	}
	if err := saveStore(dir, s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, logName)); !os.IsNotExist(err) {
		t.Fatalf("log still there after the store was written: %v", err)
	}
	if s2, logged, err := loadStore(dir); err != nil || logged != 0 || len(s2.Records) != 3 {
		t.Fatalf("reload: %d records, %d logged, %v", len(s2.Records), logged, err)
	}
}
