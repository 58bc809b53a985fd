package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// checkREADMESample runs the README's first `ask` (the block marked
// readme-test: ask-sample) against a serve with the sample corpus and
// checks that every line the README shows is what ask prints: "…" stands
// for what the README leaves out, and the workflow id and the timing vary.
func checkREADMESample(t *testing.T, url string) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme-test: ask-sample -->\n```sh\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no sh block marked readme-test: ask-sample")
	}
	lines := strings.Split(strings.TrimSpace(string(m[1])), "\n")
	q := regexp.MustCompile(`^\$ go run \./cmd/agentbus ask "(.+)"$`).FindStringSubmatch(lines[0])
	if q == nil {
		t.Fatalf("the sample's first line %q is not an ask", lines[0])
	}
	code, out, stderr := cli(t, "ask", "--url", url, q[1])
	if code != exitCompleted {
		t.Fatalf("ask %q: exit %d: %s\n%s", q[1], code, stderr, out)
	}
	vary := regexp.MustCompile(`workflow [0-9a-f-]{36}|in [0-9.]+ (ms|s|µs)`)
	norm := func(s string) string { return vary.ReplaceAllString(s, "…") }
	got := strings.Split(norm(out), "\n")
	at := 0 // the README's lines appear in order
	for _, want := range lines[1:] {
		if strings.TrimSpace(want) == "…" {
			continue
		}
		prefix, _, _ := strings.Cut(norm(want), "…")
		i := at
		for i < len(got) && !strings.HasPrefix(got[i], prefix) {
			i++
		}
		if i == len(got) {
			t.Fatalf("README line %q is not what ask prints (after line %d):\n%s", want, at, out)
		}
		at = i + 1
	}
}
