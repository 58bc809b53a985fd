package a2a

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // a substring of the error; empty means valid
	}{
		{"defaults", Config{}, ""},
		{"public URL", Config{PublicURL: "https://agents.example.com/bus/"}, ""},
		{"public URL without scheme", Config{PublicURL: "agents.example.com"}, "public URL"},
		{"public URL with a query", Config{PublicURL: "http://x/?a=1"}, "public URL"},
		{"negative block timeout", Config{BlockTimeout: -time.Second}, "block timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.SetDefaults()
			err := tc.cfg.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
			if tc.cfg.Name == "" || tc.cfg.Version == "" || tc.cfg.BlockTimeout == 0 {
				t.Errorf("defaults not set: %+v", tc.cfg)
			}
		})
	}
}
