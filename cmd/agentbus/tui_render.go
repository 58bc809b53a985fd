package main

import (
	"fmt"
	"image/color"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentbus/agentbus/events"
)

// tuiStyles are the live view's colours and glyphs.
type tuiStyles struct {
	title, dim, bold, section lipgloss.Style
	phase                     map[stepPhase]lipgloss.Style
	ok, bad, warn, info       lipgloss.Style
}

func newTUIStyles() tuiStyles {
	fg := func(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }
	green, red, yellow, blue, grey := lipgloss.Color("2"), lipgloss.Color("1"), lipgloss.Color("3"), lipgloss.Color("4"), lipgloss.Color("8")
	return tuiStyles{
		title:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("5")),
		dim:     fg(grey),
		bold:    lipgloss.NewStyle().Bold(true),
		section: lipgloss.NewStyle().Bold(true).Underline(true),
		ok:      fg(green), bad: fg(red), warn: fg(yellow), info: fg(blue),
		phase: map[stepPhase]lipgloss.Style{
			stepQueued: fg(grey), stepRunning: fg(blue), stepAwaiting: fg(yellow).Bold(true),
			stepCompleted: fg(green), stepFailed: fg(red).Bold(true), stepSkipped: fg(grey),
			stepCanceled: fg(yellow), stepRejected: fg(red),
		},
	}
}

// phaseIcon is a settled or waiting step's mark; a running one shows the
// spinner instead.
func phaseIcon(p stepPhase) string {
	return [...]string{"○", "•", "?", "✓", "✗", "-", "⊘", "✗"}[p]
}

// renderOpts says how to draw a view: the terminal's size (Height 0 for
// the final screen, which is printed whole), the time, the spinner's
// frame, a progress bar and a Markdown renderer (nil: plain text).
type renderOpts struct {
	Width, Height int
	Now           time.Time
	Spinner       string
	Bar           func(percent float64) string
	Markdown      func(text string, width int) string
	Styles        tuiStyles
	// Interrupted says the user stopped following (Ctrl-C).
	Interrupted bool
}

// renderView draws v: header, plan tree, answer, footer. Every line but
// the answer's is cut at the width rather than wrapped, so that a narrow
// terminal keeps the layout.
func renderView(v *workflowView, o renderOpts) string {
	if o.Width <= 0 {
		o.Width = 80
	}
	head := renderHeader(v, o)
	tree := renderTree(v, o)
	foot := renderFooter(v, o)
	answer := renderAnswer(v, o)
	if o.Height > 0 {
		tree, answer = fitHeight(o, len(head)+len(foot), tree, answer)
	}
	var lines []string
	lines = append(lines, head...)
	lines = append(lines, tree...)
	lines = append(lines, answer...)
	lines = append(lines, foot...)
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, o.Width, "…")
	}
	return strings.Join(lines, "\n")
}

// fitHeight shortens the answer to its last lines, then the tree, so that
// the live view fits the terminal (the final screen is never cut).
func fitHeight(o renderOpts, fixed int, tree, answer []string) ([]string, []string) {
	room := o.Height - fixed
	if len(tree)+len(answer) <= room {
		return tree, answer
	}
	keep := max(room-len(tree), min(len(answer), 4))
	if keep < len(answer) {
		if keep <= 1 {
			answer = nil
		} else {
			cut := len(answer) - keep + 1
			answer = append([]string{answer[0], o.Styles.dim.Render(fmt.Sprintf("… %d lines above", cut))}, answer[cut+1:]...)
		}
	}
	if over := len(tree) + len(answer) - room; over > 0 && len(tree) > 2 {
		n := min(over+1, len(tree)-1)
		tree = append(tree[:len(tree)-n], o.Styles.dim.Render(fmt.Sprintf("… %d more lines", n)))
	}
	return tree, answer
}

func renderHeader(v *workflowView, o renderOpts) []string {
	st := o.Styles
	state := string(v.Status)
	if state == "" {
		state = "waiting for events"
	}
	if v.Status == events.StateWorking && v.awaiting() {
		state = "awaiting approval"
	}
	stateStyle := st.info
	switch v.Status {
	case events.StateCompleted:
		stateStyle = st.ok
	case events.StateFailed, events.StateRejected:
		stateStyle = st.bad
	case events.StateCanceled, events.StateInputRequired:
		stateStyle = st.warn
	}
	if state == "awaiting approval" {
		stateStyle = st.warn
	}
	mark := o.Spinner + " "
	if v.Finished() || o.Interrupted || o.Spinner == "" {
		mark = ""
	}
	lines := []string{fmt.Sprintf("%s %s %s  %s  %s",
		st.title.Render("agentbus"), st.dim.Render("workflow"), v.Workflow, st.dim.Render("tenant "+v.Tenant),
		stateStyle.Render(mark+state)+"  "+st.bold.Render(fmtDuration(v.Elapsed(o.Now))))}
	if v.Query != "" {
		lines = append(lines, st.dim.Render("query ")+oneLine(v.Query))
	}
	if v.Message != "" && !v.Finished() {
		lines = append(lines, st.dim.Render(oneLine(v.Message)))
	}
	for _, n := range v.Notices {
		lines = append(lines, st.warn.Render("! "+n))
	}
	if !v.Finished() {
		for _, s := range v.Steps {
			if s.Phase == stepAwaiting {
				lines = append(lines, st.warn.Render(fmt.Sprintf("? step %s awaits approval: agentbus approve %s --step %s (or --reject)", s.ID, v.Workflow, s.ID)))
			}
		}
	}
	return append(lines, "")
}

func renderTree(v *workflowView, o renderOpts) []string {
	st := o.Styles
	if len(v.Steps) == 0 {
		return nil
	}
	done := 0
	for _, s := range v.Steps {
		if s.Phase.settled() {
			done++
		}
	}
	title := st.section.Render("Plan") + st.dim.Render(fmt.Sprintf("  %d/%d done", done, len(v.Steps)))
	if len(v.Stages) > 0 {
		title += st.dim.Render(fmt.Sprintf(" · %d stages", len(v.Stages)))
	}
	if !v.PlanKnown {
		title += st.dim.Render(" · plan loading")
	}
	lines := []string{title}
	w := columns{}
	for _, s := range v.Steps {
		w.id = max(w.id, ansi.StringWidth(s.ID))
		w.phase = max(w.phase, len(s.Phase.String()))
		if s.Capability != s.ID {
			w.capability = max(w.capability, ansi.StringWidth(s.Capability))
		}
	}
	byID := map[string]*stepView{}
	for _, s := range v.Steps {
		byID[s.ID] = s
	}
	groups := v.Stages
	if len(groups) == 0 { // plan not known: the steps seen, flat
		ids := make([]string, 0, len(v.Steps))
		for _, s := range v.Steps {
			ids = append(ids, s.ID)
		}
		groups = [][]string{ids}
	}
	placed := map[string]bool{}
	for i, g := range groups {
		lastStage := i == len(groups)-1
		branch, stem := "├─ ", "│  "
		if lastStage {
			branch, stem = "└─ ", "   "
		}
		if len(v.Stages) > 0 {
			label := fmt.Sprintf("stage %d", i+1)
			if len(g) > 1 {
				label += st.dim.Render(fmt.Sprintf(" · %d in parallel", len(g)))
			}
			lines = append(lines, st.dim.Render(branch)+label)
		} else {
			stem = ""
		}
		for j, id := range g {
			s := byID[id]
			if s == nil {
				continue
			}
			placed[id] = true
			twig := "├─ "
			if j == len(g)-1 {
				twig = "└─ "
			}
			lines = append(lines, st.dim.Render(stem+twig)+renderStep(s, w, o))
		}
	}
	for _, s := range v.Steps { // steps frames named that no stage holds
		if !placed[s.ID] && len(v.Stages) > 0 {
			lines = append(lines, st.dim.Render("   ")+renderStep(s, w, o))
		}
	}
	return append(lines, "")
}

// columns are the widths that align the step lines.
type columns struct{ id, capability, phase int }

func renderStep(s *stepView, w columns, o renderOpts) string {
	st := o.Styles
	ps := st.phase[s.Phase]
	icon := phaseIcon(s.Phase)
	if s.Phase == stepRunning && o.Spinner != "" && !o.Interrupted {
		icon = o.Spinner
	}
	capability := s.Capability
	if capability == s.ID { // the heuristic planner names steps by capability
		capability = ""
	}
	elapsed := fmt.Sprintf("%6s", fmtDuration(s.elapsed(o.Now)))
	if s.Started.IsZero() {
		elapsed = strings.Repeat(" ", 6)
	}
	parts := []string{ps.Render(icon) + " " + st.bold.Render(pad(s.ID, w.id))}
	if w.capability > 0 {
		parts = append(parts, st.dim.Render(pad(capability, w.capability)))
	}
	parts = append(parts, ps.Render(pad(s.Phase.String(), w.phase)), elapsed)
	if s.Retries > 0 {
		parts = append(parts, st.warn.Render(fmt.Sprintf("retry %d", s.Retries)))
	}
	if len(s.DependsOn) > 0 {
		parts = append(parts, st.dim.Render("← "+strings.Join(s.DependsOn, ", ")))
	}
	switch s.Phase {
	case stepRunning:
		if s.Percent > 0 && o.Bar != nil {
			parts = append(parts, o.Bar(s.Percent/100)+fmt.Sprintf(" %3.0f%%", s.Percent))
		}
		if s.Note != "" {
			parts = append(parts, st.dim.Render(oneLine(s.Note)))
		}
	case stepCompleted:
		if s.Worker != "" {
			parts = append(parts, st.dim.Render("on "+s.Worker))
		}
		if s.Note != "" {
			parts = append(parts, st.dim.Render(oneLine(s.Note)))
		}
	case stepAwaiting:
		parts = append(parts, st.warn.Render("approve or reject it (see above)"))
	case stepFailed, stepRejected, stepCanceled:
		if s.Note != "" {
			parts = append(parts, st.bad.Render(oneLine(s.Note)))
		}
	}
	return strings.Join(parts, "  ")
}

func renderAnswer(v *workflowView, o renderOpts) []string {
	st := o.Styles
	text, isJSON := v.AnswerText(), false
	if text == "" {
		text, isJSON = v.ResultJSON(), true
	}
	if text == "" {
		return nil
	}
	title := "Answer"
	if isJSON {
		title = "Result"
	} else if !v.Finished() {
		title += st.dim.Render("  streaming…")
	}
	lines := []string{st.section.Render(title)}
	var body string
	switch {
	case isJSON:
		body = text
	case o.Markdown != nil:
		body = o.Markdown(text, o.Width)
	default:
		body = lipgloss.NewStyle().Width(o.Width).Render(text)
	}
	lines = append(lines, strings.Split(strings.TrimRight(body, "\n"), "\n")...)
	for _, c := range v.Citations {
		src := c.Title
		if c.Source != "" {
			src += " — " + c.Source
		}
		lines = append(lines, st.dim.Render(fmt.Sprintf("  [%d] %s", c.N, strings.TrimSpace(src))))
	}
	return append(lines, "")
}

func renderFooter(v *workflowView, o renderOpts) []string {
	st := o.Styles
	var line string
	switch {
	case v.Terminal == events.TypeComplete.Short():
		line = st.ok.Render("✓ completed") + fmt.Sprintf(" in %s", fmtDuration(time.Duration(v.DurationMS*float64(time.Millisecond))))
	case v.Terminal == events.TypeError.Short():
		line = st.bad.Render("✗ failed") + ": " + oneLine(v.Failure)
	case v.Terminal == events.TypeCancelled.Short():
		line = st.warn.Render("⊘ canceled")
		if v.Failure != "" {
			line += ": " + oneLine(v.Failure)
		}
	case o.Interrupted:
		line = st.warn.Render("stopped following") + st.dim.Render(fmt.Sprintf(" · the workflow goes on · agentbus watch %s", v.Workflow))
	default:
		return []string{st.dim.Render(fmt.Sprintf("offset %d · ctrl-c stops following", v.LastOffset))}
	}
	return []string{line + st.dim.Render(fmt.Sprintf(" · last offset %d", v.LastOffset))}
}

// fmtDuration is a short, human duration: 12ms, 3.4s, 2m05s.
func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

func pad(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// oneLine folds a message onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
