package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentbus/agentbus/events"
	engine "github.com/agentbus/agentbus/workflow"
)

func testOpts(width, height int) renderOpts {
	return renderOpts{
		Width: width, Height: height, Now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Spinner: "*",
		Bar:    func(p float64) string { return strings.Repeat("#", int(p*10)) },
		Styles: newTUIStyles(),
	}
}

func plainLines(s string) []string { return strings.Split(ansi.Strip(s), "\n") }

func TestTUIRenderFinalScreen(t *testing.T) {
	v := replay(t, recorded(t, "diamond"), diamondPlan)
	out := ansi.Strip(renderView(v, testOpts(120, 0)))
	for _, want := range []string{
		"agentbus workflow " + v.Workflow, "stage 2 · 2 in parallel",
		"✓ A", "✓ B", "✓ C", "✓ D", "← B, C", "on worker-1", "Result", `"step_id": "D"`, "✓ completed in",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("final screen lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "completed") < 5 || strings.Contains(out, "queued") || strings.Contains(out, "running") {
		t.Errorf("every step should be completed:\n%s", out)
	}
}

func TestTUIRenderFailureAndCancel(t *testing.T) {
	out := ansi.Strip(renderView(replay(t, recorded(t, "fail"), chainPlan), testOpts(200, 0)))
	for _, want := range []string{"✗ B", "failed", "sleep input /ms: -5", "- C", "skipped", "✗ failed: step_failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("failed workflow's screen lacks %q:\n%s", want, out)
		}
	}
	out = ansi.Strip(renderView(replay(t, recorded(t, "cancel"), chainPlan), testOpts(200, 0)))
	for _, want := range []string{"⊘ B", "canceled", "- C", "skipped", "⊘ canceled: canceled on request"} {
		if !strings.Contains(out, want) {
			t.Errorf("canceled workflow's screen lacks %q:\n%s", want, out)
		}
	}
	out = ansi.Strip(renderView(replay(t, recorded(t, "fallback"), fallbackPlan), testOpts(200, 0)))
	if !strings.Contains(out, "retry 1") {
		t.Errorf("the fallback's retry is not shown:\n%s", out)
	}
}

// TestTUIRenderNarrow: a narrow terminal cuts lines instead of wrapping
// them, so that the tree keeps its shape.
func TestTUIRenderNarrow(t *testing.T) {
	v := replay(t, recorded(t, "diamond"), diamondPlan)
	wide := plainLines(renderView(v, testOpts(200, 0)))
	for _, w := range []int{60, 30, 12} {
		lines := plainLines(renderView(v, testOpts(w, 0)))
		if len(lines) != len(wide) {
			t.Errorf("width %d: %d lines, want %d (no wrapping)", w, len(lines), len(wide))
		}
		for _, l := range lines {
			if ansi.StringWidth(l) > w {
				t.Errorf("width %d: line %q is %d wide", w, l, ansi.StringWidth(l))
			}
		}
	}
}

// TestTUIRenderHeight: the live view fits the terminal's height, the
// answer showing its last lines.
func TestTUIRenderHeight(t *testing.T) {
	v := replay(t, recorded(t, "query"), "")
	v.Answer = strings.Repeat("line of the answer\n\n", 40) + "the last line"
	for _, h := range []int{30, 18} {
		lines := plainLines(renderView(v, testOpts(80, h)))
		if len(lines) > h {
			t.Errorf("height %d: %d lines", h, len(lines))
		}
		if !strings.Contains(strings.Join(lines, "\n"), "the last line") || !strings.Contains(strings.Join(lines, "\n"), "lines above") {
			t.Errorf("height %d: the answer's end is not shown:\n%s", h, strings.Join(lines, "\n"))
		}
	}
	if full := plainLines(renderView(v, testOpts(80, 0))); len(full) < 80 {
		t.Errorf("the final screen is cut: %d lines", len(full))
	}
}

func TestTUIRenderRunningStep(t *testing.T) {
	frames := recorded(t, "cancel")
	v := replay(t, frames[:len(frames)-2], chainPlan) // B sleeps
	o := testOpts(120, 0)
	o.Now = v.step("B").Started.Add(1500 * time.Millisecond)
	out := ansi.Strip(renderView(v, o))
	for _, want := range []string{"* B", "running", "1.5s", "sleeping 5000 ms", "○ C", "queued", "ctrl-c stops following"} {
		if !strings.Contains(out, want) {
			t.Errorf("running view lacks %q:\n%s", want, out)
		}
	}
	v.step("B").Percent = 50
	if out := ansi.Strip(renderView(v, o)); !strings.Contains(out, "#####  50%") {
		t.Errorf("no progress bar:\n%s", out)
	}
}

func TestTUIModel(t *testing.T) {
	frames := recorded(t, "diamond")
	stopped := false
	loads := 0
	load := func() (engine.Checkpoint, error) {
		loads++
		return planOf(t, diamondPlan), nil
	}
	m := newLiveModel(frames[0].WorkflowID, "default", func() { stopped = true }, load, false)
	m.Update(tea.WindowSizeMsg{Width: 40, Height: 12})
	var fetch tea.Cmd
	for _, f := range frames[:3] {
		if _, cmd := m.Update(frameMsg(f)); cmd != nil {
			if fetch != nil {
				t.Fatal("a second load while one is under way")
			}
			fetch = cmd
		}
	}
	if fetch == nil {
		t.Fatal("no load of the plan after the first step frame")
	}
	// Following ends before the plan came: the model waits for it.
	if _, cmd := m.Update(followDoneMsg{last: frames[2]}); cmd != nil || m.quitting {
		t.Fatal("quit before the plan came")
	}
	if _, cmd := m.Update(fetch()); cmd == nil || !m.quitting || loads != 1 || !m.view.PlanKnown {
		t.Fatalf("after the plan: quitting %v loads %d plan %v", m.quitting, loads, m.view.PlanKnown)
	}
	if m.View().Content != "" {
		t.Fatal("the live region is not cleared on quit")
	}
	for _, l := range plainLines(m.finalScreen()) {
		if ansi.StringWidth(l) > 40 {
			t.Errorf("final line wider than the terminal: %q", l)
		}
	}

	// Ctrl-C stops following; the view says so.
	m = newLiveModel("w", "default", func() { stopped = true }, func() (engine.Checkpoint, error) {
		return engine.Checkpoint{}, errors.New("no")
	}, false)
	m.Update(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	if !stopped || !m.interrupted {
		t.Fatal("ctrl+c did not stop following")
	}
	if !strings.Contains(ansi.Strip(m.View().Content), "stopped following") {
		t.Fatalf("view after ctrl+c:\n%s", m.View().Content)
	}
	// A resize redraws at the new size, cut to it.
	m.Update(frameMsg(events.Frame{Type: "status", Data: []byte(`{"state":"working","message":"` + strings.Repeat("x", 100) + `"}`)}))
	m.Update(tea.WindowSizeMsg{Width: 25, Height: 10})
	for _, l := range plainLines(m.View().Content) {
		if ansi.StringWidth(l) > 25 {
			t.Errorf("line wider than 25 after resize: %q", l)
		}
	}
}

// TestTUIMarkdown: the answer is rendered from Markdown, wrapped to the
// width, without the padding glamour adds to each line.
func TestTUIMarkdown(t *testing.T) {
	md := &markdownCache{style: "dark"}
	text := "# Parsing\n\nUse *url.ParseQuery* to read a query string; it returns the values by key and the first error. [1]\n\n- one\n- two"
	out := md.render(text, 40)
	plain := ansi.Strip(out)
	for _, want := range []string{"Parsing", "url.ParseQuery", "[1]", "• one"} {
		if !strings.Contains(plain, want) {
			t.Errorf("rendered answer lacks %q:\n%s", want, plain)
		}
	}
	if strings.Contains(plain, "*url") || strings.Contains(plain, "# Parsing") {
		t.Errorf("Markdown left as is:\n%s", plain)
	}
	for _, l := range strings.Split(plain, "\n") {
		if ansi.StringWidth(l) > 40 || strings.HasSuffix(l, " ") {
			t.Errorf("line %q: %d wide or padded", l, ansi.StringWidth(l))
		}
	}
	if md.render(text, 40) != out {
		t.Error("the same text renders differently")
	}
}
