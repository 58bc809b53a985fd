package ingest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// entry is one journal line: how far a file got, for one tenant and
// backend. The latest line for a path wins.
type entry struct {
	Path    string `json:"path"`
	Tenant  string `json:"tenant"`
	Backend string `json:"backend"`
	Size    int64  `json:"size"`
	MTime   int64  `json:"mtime_ns"`
	SHA256  string `json:"sha256"`
	// Line is the last JSONL line whose chunks are all written.
	Line int  `json:"line,omitempty"`
	Done bool `json:"done,omitempty"`
}

// journal is the append-only progress file. The zero journal keeps
// nothing (runs without a journal, or of a reader).
type journal struct {
	f       *os.File
	entries map[string]entry
}

// openJournal loads path, keeps the latest entry of each file written for
// this tenant and backend, rewrites the file compacted and opens it for
// appending. When the tenant's index is empty, earlier entries are
// dropped: whatever they recorded is gone.
func openJournal(ctx context.Context, cfg Config, path string) (*journal, error) {
	j := &journal{entries: map[string]entry{}}
	if path == "" {
		return j, nil
	}
	backend := cfg.Backend.Name()
	var keep []entry // other tenants' and backends' entries, kept as they are
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			var e entry
			if json.Unmarshal(sc.Bytes(), &e) != nil || e.Path == "" {
				continue // a line torn by a crash: that progress is redone
			}
			if e.Tenant == cfg.Tenant && e.Backend == backend {
				j.entries[e.Path] = e
			} else {
				keep = append(keep, e)
			}
		}
		err := sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", ErrJournal, path, err)
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	if len(j.entries) > 0 {
		n, err := cfg.Backend.Count(ctx, cfg.Tenant)
		if err != nil {
			return nil, fmt.Errorf("ingest: count tenant %s: %w", cfg.Tenant, err)
		}
		if n == 0 {
			clear(j.entries)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	ours := make([]entry, 0, len(j.entries))
	for _, e := range j.entries {
		ours = append(ours, e)
	}
	slices.SortFunc(ours, func(a, b entry) int { return strings.Compare(a.Path, b.Path) })
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, e := range append(keep, ours...) {
		_ = enc.Encode(e)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	j.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	return j, nil
}

// lookup returns the file's entry, if any.
func (j *journal) lookup(path string) (entry, bool) {
	e, ok := j.entries[path]
	return e, ok
}

// record appends entries, in order.
func (j *journal) record(es []entry) error {
	if j.f == nil {
		return nil
	}
	var b []byte
	for _, e := range es {
		line, _ := json.Marshal(e)
		b = append(append(b, line...), '\n')
		j.entries[e.Path] = e
	}
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("%w: %w", ErrJournal, err)
	}
	return nil
}

func (j *journal) close() {
	if j.f != nil {
		_ = j.f.Sync()
		_ = j.f.Close()
	}
}
