package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/retrieval/vespa"
	"github.com/agentbus/agentbus/retrieval/vespa/vespatest"
)

// searchCLI runs the CLI with index and eval registered (whether or not
// main.go registers them yet) and returns the exit code and output.
func searchCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := newRoot()
	have := map[string]bool{}
	for _, c := range root.Commands() {
		have[c.Name()] = true
	}
	for _, c := range []*cobra.Command{newIndex(), newEval()} {
		if !have[c.Name()] {
			root.AddCommand(c)
		}
	}
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.ExecuteContext(ctx)
	code := exitCompleted
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
		fmt.Fprintln(&errb, "agentbus:", ee.msg)
	case err != nil:
		code = exitUsage
		fmt.Fprintln(&errb, "agentbus:", err)
	}
	return code, out.String(), errb.String()
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sampleDocs are a few documents on distinct subjects, and a bad line.
var sampleDocs = map[string]string{
	"guides/hashing.md": "# Hashing\n\nUse crypto/sha256 to compute a SHA-256 checksum of a file.\n",
	"guides/csv.txt":    "Read comma separated values with encoding/csv: a Reader returns records.",
	"notes.jsonl": `{"id":"urls","title":"URLs","text":"Parse a URL and its query string with net/url."}` + "\n" +
		`{"id":"broken","title":"no text"}` + "\n" +
		`{"id":"gzip","text":"Compress a stream with gzip writers and readers."}` + "\n",
}

func TestIndexCommand(t *testing.T) {
	fake := vespatest.New(t)
	data, docs := t.TempDir(), t.TempDir()
	writeFiles(t, docs, sampleDocs)
	args := []string{"index", "--data", data, "--tenant", "acme", "--search-backend", "vespa", "--vespa-url", fake.URL, docs}

	code, out, errs := searchCLI(t, args...)
	if code != exitFailed {
		t.Fatalf("index with a bad line: exit %d, want %d (problems reported, the rest indexed)\n%s%s", code, exitFailed, out, errs)
	}
	bad := filepath.ToSlash(filepath.Join(docs, "notes.jsonl")) + ":2: /text: required property is missing"
	for _, want := range []string{"indexed 4 documents (4 chunks) from 3 files into tenant acme", "1 problem:", bad} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "indexing: 100% 3/3 files, 4 documents, 4 chunks") {
		t.Errorf("stderr (not a terminal) lacks a plain progress line:\n%s", errs)
	}
	if _, err := os.Stat(journalPath(data, "acme")); err != nil {
		t.Errorf("no journal: %v", err)
	}
	b, err := vespa.New(vespa.Config{URL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.Count(t.Context(), "acme"); err != nil || n != 4 {
		t.Fatalf("Count = %d, %v, want 4", n, err)
	}

	// A rerun finds everything indexed and unchanged.
	code, out, errs = searchCLI(t, args...)
	if code != exitCompleted || !strings.Contains(out, "indexed 0 documents (0 chunks) from 0 files") || !strings.Contains(out, "skipped 3 files") {
		t.Fatalf("rerun: exit %d:\n%s%s", code, out, errs)
	}
	// Fixing the bad line rereads that file alone.
	writeFiles(t, docs, map[string]string{"notes.jsonl": strings.Replace(sampleDocs["notes.jsonl"], `"no text"`, `"no text","text":"Now it has text."`, 1)})
	code, out, errs = searchCLI(t, append(args, "--json")...)
	if code != exitCompleted || !strings.Contains(out, `"documents": 3`) || !strings.Contains(out, `"skipped": 2`) {
		t.Fatalf("after the fix: exit %d:\n%s%s", code, out, errs)
	}
	if n, err := b.Count(t.Context(), "acme"); err != nil || n != 5 {
		t.Fatalf("Count = %d, %v, want 5", n, err)
	}
}

func TestIndexCommandUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no paths", []string{"index"}, "requires at least 1 arg"},
		{"unknown backend", []string{"index", "--search-backend", "solr", dir}, `--search-backend "solr": want embedded or vespa`},
		{"vespa without url", []string{"index", "--search-backend", "vespa", dir}, "--search-backend vespa needs --vespa-url"},
		{"bad tenant", []string{"index", "--tenant", "A.B", "--search-backend", "vespa", "--vespa-url", "http://127.0.0.1:1", dir}, "--tenant: "},
		{"url without vespa", []string{"index", "--vespa-url", "http://x", dir}, "--vespa-url needs --search-backend vespa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := searchCLI(t, tt.args...)
			if code != exitUsage || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d (want %d), stderr lacks %q:\n%s%s", code, exitUsage, tt.want, out, errs)
			}
		})
	}
}

func TestIndexCommandEnv(t *testing.T) {
	fake := vespatest.New(t)
	docs := t.TempDir()
	writeFiles(t, docs, map[string]string{"a.md": "Alpha."})
	t.Setenv("AGENTBUS_SEARCH_BACKEND", "vespa")
	t.Setenv("AGENTBUS_VESPA_URL", fake.URL)
	t.Setenv("AGENTBUS_TENANT", "globex")
	code, out, errs := searchCLI(t, "index", "--data", t.TempDir(), docs)
	if code != exitCompleted || !strings.Contains(out, "into tenant globex") {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
}
