package mcptool_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/mcptool"
	"github.com/agentbus/agentbus/subjects"
)

func TestParseSpec(t *testing.T) {
	env := map[string]string{
		"AGENTBUS_MCP_HEADERS_WEB_2": "Authorization=Bearer%20s3cret, X-Team=search",
		"AGENTBUS_MCP_HEADERS_BAD":   "no-equals-sign",
	}
	getenv := func(k string) string { return env[k] }
	ok := []struct {
		spec    string
		command []string
		url     string
		headers map[string]string
	}{
		{spec: "files=stdio:/usr/bin/mcp-files --root /tmp", command: []string{"/usr/bin/mcp-files", "--root", "/tmp"}},
		{spec: `sh=stdio:sh -c 'echo "a b"' x\ y "q\"uote"`, command: []string{"sh", "-c", `echo "a b"`, "x y", `q"uote`}},
		{spec: "web=https://host.example/mcp", url: "https://host.example/mcp"},
		{spec: "web-2=http://127.0.0.1:9/mcp", url: "http://127.0.0.1:9/mcp", headers: map[string]string{"Authorization": "Bearer s3cret", "X-Team": "search"}},
	}
	for _, c := range ok {
		s, err := mcptool.ParseSpec(c.spec, getenv)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		if strings.Join(s.Command, "|") != strings.Join(c.command, "|") || s.URL != c.url {
			t.Errorf("%s: command %q url %q, want %q %q", c.spec, s.Command, s.URL, c.command, c.url)
		}
		for k, v := range c.headers {
			if s.Headers.Get(k) != v {
				t.Errorf("%s: header %s = %q, want %q", c.spec, k, s.Headers.Get(k), v)
			}
		}
	}
	bad := []struct{ spec, says string }{
		{"files", "want NAME=stdio:"},
		{"Files=stdio:x", "server name"},
		{"my_files=stdio:x", "no '_'"},
		{"files=stdio:", "needs a command"},
		{"files=stdio:x 'open", "unclosed '"},
		{"files=/usr/bin/x", "neither stdio:COMMAND nor an http(s) URL"},
		{"web=https:///mcp", "with a host"},
		{"bad=https://h/mcp", "AGENTBUS_MCP_HEADERS_BAD"},
	}
	for _, c := range bad {
		_, err := mcptool.ParseSpec(c.spec, getenv)
		if !errors.Is(err, mcptool.ErrBadSpec) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrBadSpec saying %q", c.spec, err, c.says)
		}
	}
}

func TestCapabilities(t *testing.T) {
	long := strings.Repeat("x", 80)
	got := mcptool.Capabilities("files", []string{"read_file", "Read_File", "search.v2", long, "write-file"})
	if got["read_file"] != "tool_files_read_file" || got["write-file"] != "tool_files_write-file" || got["search.v2"] != "tool_files_search_v2" {
		t.Errorf("plain names: %v", got)
	}
	if c := got["Read_File"]; !strings.HasPrefix(c, "tool_files_read_file-") {
		t.Errorf("Read_File collides with read_file and maps to %q, want a hashed name", c)
	}
	seen := map[string]bool{}
	for tool, c := range got {
		if err := subjects.ValidCapability(c); err != nil {
			t.Errorf("%s → %q: %v", tool, c, err)
		}
		if seen[c] {
			t.Errorf("%q given twice", c)
		}
		seen[c] = true
	}
	if len(got) != 5 {
		t.Errorf("%d of 5 tools mapped: %v", len(got), got)
	}
}
