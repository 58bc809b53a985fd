package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestServePortTaken: serve whose NATS or HTTP port is taken says so at
// once, naming the address and the flag, and exits 3.
func TestServePortTaken(t *testing.T) {
	for _, tc := range []struct{ name, flag, other, what string }{
		{"nats", "--nats-addr", "--http-addr", "nats"},
		{"http", "--http-addr", "--nats-addr", "http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			addr := l.Addr().String()
			other := map[string]string{"--http-addr": "127.0.0.1:0", "--nats-addr": "127.0.0.1:-1"}[tc.other]
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errb strings.Builder
			start := time.Now()
			code := run(ctx, []string{"serve", "--data", t.TempDir(), "--log-level", "error", "--sample-corpus=false", tc.flag, addr, tc.other, other}, &out, &errb)
			took := time.Since(start)
			want := "agentbus: " + tc.what + " listen " + addr + ": address already in use"
			if code != exitUsage || !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), tc.flag) {
				t.Fatalf("exit %d, stderr %q: want %d and %q naming %s", code, errb.String(), exitUsage, want, tc.flag)
			}
			if took > 5*time.Second {
				t.Errorf("took %s to say the port is taken", took)
			}
		})
	}
}
