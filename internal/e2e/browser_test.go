package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// browser starts a headless Chromium for the test, closed at cleanup, and
// returns a context that drives its one tab. The flags are those this
// sandboxed machine needs (no sandbox as root, no background network).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("AGENTBUS_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("AGENTBUS_SKIP_BROWSER") == "1" {
			t.Skip("no chromium and AGENTBUS_SKIP_BROWSER=1")
		}
		t.Fatal("e2e: no chromium on PATH (apt-get install -y chromium, or set AGENTBUS_CHROMIUM; AGENTBUS_SKIP_BROWSER=1 skips)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser; it lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("e2e: start chromium %s: %v", path, err)
	}
	return ctx
}

// await evaluates a JavaScript expression that yields a promise and
// decodes what it resolves to into out.
func await(ctx context.Context, expr string, out any) error {
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
