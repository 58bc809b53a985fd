package main

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

func TestReadVersion(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name            string
		bi              *debug.BuildInfo
		ok              bool
		version, commit string
		want            versionInfo
	}{
		{"build info", stamped, true, "", "", versionInfo{Version: "v1.4.0", Commit: "0123abcd", Modified: true, Go: "go1.26.8"}},
		{"ldflags win", stamped, true, "v2.0.0", "feedface", versionInfo{Version: "v2.0.0", Commit: "feedface", Go: "go1.26.8"}},
		{"devel without vcs", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true, "", "", versionInfo{Version: "devel", Go: "go1.26.8"}},
		{"no build info", nil, false, "", "", versionInfo{Version: "devel", Go: runtime.Version()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Platform, tc.want.NATSServer = runtime.GOOS+"/"+runtime.GOARCH, server.VERSION
			if got := readVersion(tc.bi, tc.ok, tc.version, tc.commit); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	s := readVersion(stamped, true, "", "").String()
	for _, want := range []string{"agentbus v1.4.0\n", "commit:      0123abcd (modified)\n", "go:          go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH + "\n", "nats-server: " + server.VERSION + " (embedded)\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
}

// TestVersionCommand: `agentbus version`, `agentbus --version` and
// `version --json` print the same facts.
func TestVersionCommand(t *testing.T) {
	want := currentVersion().String()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, stderr := cli(t, args...)
		if code != exitCompleted || out != want || !strings.Contains(out, "nats-server: "+server.VERSION) || !strings.Contains(out, runtime.Version()) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", args, code, out, stderr, want)
		}
	}
	code, out, _ := cli(t, "version", "--json")
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); code != exitCompleted || err != nil || v.NATSServer != server.VERSION || v.Go == "" || v.Version == "" {
		t.Errorf("version --json: exit %d, %v: %s", code, err, out)
	}
}
