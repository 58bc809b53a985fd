package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEDocuments runs the README's documents block (upload, wait,
// read, delete) with sh against a serve, and checks what it prints.
func TestREADMEDocuments(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme-test: documents -->\n```sh\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no sh block marked readme-test: documents")
	}
	s := startServe(t, t.TempDir())
	cmd := exec.Command("sh", "-e", "-c", string(m[1]))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "AGENTBUS_URL="+s.info.HTTPURL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's documents block: %v\n%s", err, out)
	}
	for _, want := range []string{"event: complete", `"id": "herons.md"`, `"title": "Herons"`, `"chunks": 1`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the block printed no %s:\n%s", want, out)
		}
	}
	if n := strings.Count(string(out), `"chunks": 1`); n != 2 {
		t.Errorf("want the document and its deletion each with one chunk, got %d mentions:\n%s", n, out)
	}
}
