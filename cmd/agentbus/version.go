package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"
)

// version and commit override what the build info says, for builds that
// have no VCS information (a source tarball, a Docker context):
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/agentbus
var version, commit string

// versionInfo is what `agentbus version` prints.
type versionInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
	NATSServer string `json:"nats_server"`
}

// readVersion reads the version from the build info (main module version,
// vcs.revision, vcs.modified), with the -ldflags overrides winning.
func readVersion(bi *debug.BuildInfo, ok bool, version, commit string) versionInfo {
	v := versionInfo{Version: "devel", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, NATSServer: server.VERSION}
	if ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			v.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		v.Version = version
	}
	if commit != "" {
		v.Commit, v.Modified = commit, false
	}
	return v
}

// currentVersion is this binary's version.
func currentVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	return readVersion(bi, ok, version, commit)
}

// String is the multi-line form `agentbus --version` prints.
func (v versionInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentbus %s\n", v.Version)
	c := v.Commit
	if c == "" {
		c = "unknown"
	}
	if v.Modified {
		c += " (modified)"
	}
	fmt.Fprintf(&b, "commit:      %s\n", c)
	fmt.Fprintf(&b, "go:          %s %s\n", v.Go, v.Platform)
	fmt.Fprintf(&b, "nats-server: %s (embedded)\n", v.NATSServer)
	return b.String()
}

func newVersion() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and embedded nats-server version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			_, err := fmt.Fprint(cmd.OutOrStdout(), v)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
