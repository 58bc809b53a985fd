package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndexRemote uploads a directory to a running serve with index --url:
// every readable file is indexed there under its relative path, a bad
// JSONL line is a problem (exit status 1), and the documents are listed.
func TestIndexRemote(t *testing.T) {
	s := startServe(t, t.TempDir())
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.md", "# A\n\nThe albatross glides for hours.\n")
	write("sub/b.html", "<html><head><title>B</title></head><body><article><p>The bittern booms at dusk over the reeds.</p></article></body></html>")
	write("notes.jsonl", "{\"id\":\"r1\",\"text\":\"The rail hides in the marsh.\"}\nnot json\n")
	write(".hidden/x.md", "# X\n\nskipped\n")
	write("image.png", "not a document")
	code, out, stderr := cli(t, "index", "--url", s.info.HTTPURL, dir)
	if code != exitFailed || !strings.Contains(out, "indexed 3 documents") || !strings.Contains(out, "notes.jsonl:2:") {
		t.Fatalf("index --url: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "uploaded 3 files") {
		t.Errorf("no upload line on stderr:\n%s", stderr)
	}
	resp, err := http.Get(s.info.HTTPURL + "/v1/documents")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Documents []struct {
			ID string `json:"id"`
		} `json:"documents"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range page.Documents {
		ids = append(ids, d.ID)
	}
	if strings.Join(ids, ",") != "a.md,r1,sub/b.html" {
		t.Fatalf("documents on the server: %v, want a.md, r1, sub/b.html", ids)
	}
	if code, _, stderr := cli(t, "index", "--url", s.info.HTTPURL, t.TempDir()); code != exitUsage || !strings.Contains(stderr, "no file to upload") {
		t.Fatalf("index --url of nothing indexable: exit %d %s", code, stderr)
	}
}
