package main

import (
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/progress"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/glamour/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"

	"github.com/agentbus/agentbus/events"
	engine "github.com/agentbus/agentbus/workflow"
)

// This file runs the live view of `ask` and `watch` on a terminal: a
// bubbletea program around the workflowView state machine
// (tui_state.go), fed by the same frames that client.follow gives the
// plain printer.

// liveTerminal returns stdout as a terminal when the live view should
// draw on it: not --plain or --json, stdout a terminal, and TERM not dumb.
func liveTerminal(out io.Writer, f clientFlags, plain bool) (*os.File, bool) {
	if plain || f.json || os.Getenv("TERM") == "dumb" {
		return nil, false
	}
	file, ok := out.(*os.File)
	if !ok || !term.IsTerminal(file.Fd()) {
		return nil, false
	}
	return file, true
}

// Messages the live program receives besides bubbletea's own.
type (
	frameMsg      events.Frame
	followDoneMsg struct {
		last events.Frame
		err  error
	}
	snapshotMsg struct {
		cp         engine.Checkpoint
		withStates bool
		err        error
	}
)

// liveModel is the bubbletea model of the live view. It is driven by one
// program goroutine, as bubbletea models are.
type liveModel struct {
	view          *workflowView
	width, height int
	now           time.Time
	spin          spinner.Model
	bar           progress.Model
	md            *markdownCache
	styles        tuiStyles
	// stop ends following (Ctrl-C); load fetches the workflow's
	// checkpoint for the plan; loadStates says the first one is also the
	// state (watch from an offset saw no event before it).
	stop       context.CancelFunc
	load       func() (engine.Checkpoint, error)
	loadStates bool
	loading    bool
	loads      int
	// followed is set when following ended; quitting once the view is
	// final (the snapshot asked for has come).
	followed    bool
	interrupted bool
	quitting    bool
}

// maxLoads bounds the checkpoint fetches for the plan: a workflow whose
// planning failed has none to find.
const maxLoads = 3

func newLiveModel(workflow, tenant string, stop context.CancelFunc, load func() (engine.Checkpoint, error), loadStates bool) *liveModel {
	return &liveModel{
		view: newWorkflowView(workflow, tenant), width: 80, now: time.Now(),
		spin:   spinner.New(spinner.WithSpinner(spinner.MiniDot)),
		bar:    progress.New(progress.WithWidth(12), progress.WithoutPercentage(), progress.WithDefaultBlend()),
		md:     &markdownCache{style: "dark"},
		styles: newTUIStyles(),
		stop:   stop, load: load, loadStates: loadStates,
	}
}

func (m *liveModel) Init() tea.Cmd {
	cmds := []tea.Cmd{m.spin.Tick, tea.RequestBackgroundColor}
	if m.loadStates {
		cmds = append(cmds, m.fetch())
	}
	return tea.Batch(cmds...)
}

// fetch loads the checkpoint once more, unless a load is under way or
// the plan is known.
func (m *liveModel) fetch() tea.Cmd {
	if m.loading || m.view.PlanKnown || m.loads >= maxLoads || m.load == nil {
		return nil
	}
	m.loading, m.loads = true, m.loads+1
	withStates := m.loadStates && m.loads == 1
	load := m.load
	return func() tea.Msg {
		cp, err := load()
		return snapshotMsg{cp: cp, withStates: withStates, err: err}
	}
}

func (m *liveModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case frameMsg:
		f := events.Frame(msg)
		m.view.apply(f)
		m.now = time.Now()
		// The stream has no plan: ask the checkpoint once there is one
		// (planned, or a step moves).
		if f.StepID != "" || f.Type == events.TypeStatus.Short() && m.view.Status == events.StateWorking {
			return m, m.fetch()
		}
	case snapshotMsg:
		m.loading = false
		if msg.err == nil {
			m.view.applySnapshot(msg.cp, msg.withStates)
		}
		if m.followed {
			return m.quit()
		}
	case followDoneMsg:
		m.followed = true
		if !m.loading {
			return m.quit()
		}
	case spinner.TickMsg:
		m.now = time.Now()
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.BackgroundColorMsg:
		if !msg.IsDark() {
			m.md.setStyle("light")
		}
	case tea.KeyPressMsg:
		if msg.String() == "ctrl+c" {
			m.interrupted = true
			m.stop()
		}
	}
	return m, nil
}

func (m *liveModel) quit() (tea.Model, tea.Cmd) {
	m.quitting = true
	return m, tea.Quit
}

// View draws the live view, cut to the terminal's height; once quitting
// it is empty, and the caller prints the final screen whole.
func (m *liveModel) View() tea.View {
	if m.quitting {
		return tea.NewView("")
	}
	return tea.NewView(renderView(m.view, m.opts(m.height)))
}

func (m *liveModel) opts(height int) renderOpts {
	return renderOpts{
		Width: m.width, Height: height, Now: m.now, Spinner: m.spin.View(),
		Bar: m.bar.ViewAs, Markdown: m.md.render, Styles: m.styles, Interrupted: m.interrupted,
	}
}

// finalScreen is the view printed when the program ends: every step's
// final state and the whole answer.
func (m *liveModel) finalScreen() string {
	o := m.opts(0)
	o.Now = time.Now()
	return renderView(m.view, o) + "\n"
}

// markdownCache renders the answer as Markdown for the terminal,
// re-rendering only when the text or width changed (chunks stream in at
// a much lower rate than the spinner redraws).
type markdownCache struct {
	style       string
	text, out   string
	width       int
	unavailable bool
}

func (c *markdownCache) setStyle(s string) { c.style, c.text = s, "" }

func (c *markdownCache) render(text string, width int) string {
	if c.unavailable {
		return text
	}
	if text == c.text && width == c.width && c.out != "" {
		return c.out
	}
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle(c.style), glamour.WithWordWrap(max(width-4, 20)))
	if err != nil {
		c.unavailable = true
		return text
	}
	out, err := r.Render(text)
	if err != nil {
		return text
	}
	// glamour pads each line to the wrap width: drop that, so that a
	// narrower terminal after a resize does not wrap it.
	lines := strings.Split(strings.Trim(out, "\n"), "\n")
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, ansi.StringWidth(strings.TrimRight(ansi.Strip(l), " ")), "")
	}
	c.text, c.width, c.out = text, width, strings.Join(lines, "\n")
	return c.out
}

// followLive follows workflow in the live view and returns the last frame
// and the error as client.follow does, after the final screen is printed.
func followLive(ctx context.Context, c *client, tty *os.File, wf string, from uint64) (events.Frame, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	load := func() (engine.Checkpoint, error) {
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
		defer lcancel()
		return c.checkpoint(lctx, wf)
	}
	m := newLiveModel(wf, c.tenant, cancel, load, from > 0)
	m.view.LastOffset = from
	var in io.Reader // no keys unless stdin is the terminal: Ctrl-C is then SIGINT
	if term.IsTerminal(os.Stdin.Fd()) {
		in = os.Stdin
	}
	p := tea.NewProgram(m, tea.WithOutput(tty), tea.WithInput(in), tea.WithoutSignalHandler())
	var last events.Frame
	var ferr error
	var wg sync.WaitGroup
	wg.Go(func() {
		last, ferr = c.follow(ctx, wf, from, func(f events.Frame) error {
			p.Send(frameMsg(f))
			return nil
		})
		p.Send(followDoneMsg{last: last, err: ferr})
	})
	_, err := p.Run()
	cancel()
	wg.Wait()
	w := colorprofile.NewWriter(tty, os.Environ())
	_, _ = io.WriteString(w, m.finalScreen())
	if err != nil && ferr == nil && !last.Terminal() {
		ferr = err
	}
	return last, ferr
}
