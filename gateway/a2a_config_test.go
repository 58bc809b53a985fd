package gateway

import (
	"strings"
	"testing"
	"time"
)

func TestA2AConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  A2AConfig
		want string // a substring of the error; empty means valid
	}{
		{"defaults", A2AConfig{}, ""},
		{"public URL", A2AConfig{PublicURL: "https://agents.example.com/bus/"}, ""},
		{"public URL without scheme", A2AConfig{PublicURL: "agents.example.com"}, "public URL"},
		{"public URL with a query", A2AConfig{PublicURL: "http://x/?a=1"}, "public URL"},
		{"negative block timeout", A2AConfig{BlockTimeout: -time.Second}, "block timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.setDefaults()
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
