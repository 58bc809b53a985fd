package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// ptyRun is the agentbus binary running on a pseudo-terminal, whose
// output feeds a terminal emulator (the screen as a person sees it; the
// live view redraws only the cells that changed, so its raw output is no
// text to search) that answers the program's terminal queries as a real
// terminal would.
type ptyRun struct {
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	raw  bytes.Buffer
	emu  *vt.Emulator
	more chan struct{} // a signal per read
	done chan struct{} // the process ended and its output was read
}

func startPTY(t *testing.T, cols, rows uint16, args ...string) *ptyRun {
	t.Helper()
	cmd := exec.Command(agentbusBinary(t), args...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLORTERM=", "NO_COLOR=")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	r := &ptyRun{cmd: cmd, tty: tty, emu: vt.NewEmulator(int(cols), int(rows)), more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() { _, _ = io.Copy(tty, r.emu) }() // the emulator's answers are the terminal's input
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 32<<10)
		for {
			n, err := tty.Read(buf)
			r.mu.Lock()
			r.raw.Write(buf[:n])
			_, _ = r.emu.Write(buf[:n])
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
			if err != nil { // EIO once the process closed its side
				return
			}
		}
	}()
	go func() { _ = cmd.Wait(); <-read; close(r.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.done
		// Ends the copy of the emulator's answers (Emulator.Close would
		// race with its Read).
		_ = r.emu.InputPipe().(io.Closer).Close()
		_ = tty.Close()
		if t.Failed() {
			t.Logf("screen of %v:\n%s\noutput as text:\n%s", args, r.screen(), r.text())
		}
	})
	return r
}

func (r *ptyRun) output() string { r.mu.Lock(); defer r.mu.Unlock(); return r.raw.String() }

// screen is what the terminal shows now.
func (r *ptyRun) screen() string { r.mu.Lock(); defer r.mu.Unlock(); return r.emu.String() }

// resize resizes the terminal and its emulator.
func (r *ptyRun) resize(t *testing.T, cols, rows uint16) {
	t.Helper()
	r.mu.Lock()
	r.emu.Resize(int(cols), int(rows))
	r.mu.Unlock()
	if err := pty.Setsize(r.tty, &pty.Winsize{Cols: cols, Rows: rows}); err != nil {
		t.Fatal(err)
	}
}

// text is the whole output without escape sequences and carriage
// returns: what the program printed after the live view ended is there
// as it was written.
func (r *ptyRun) text() string {
	return strings.ReplaceAll(ansi.Strip(r.output()), "\r", "")
}

// waitScreen waits until the screen matches re and returns the match.
func (r *ptyRun) waitScreen(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if m := re.FindStringSubmatch(r.screen()); m != nil {
			return m
		}
		select {
		case <-r.more:
		case <-r.done:
			if m := re.FindStringSubmatch(r.screen()); m != nil {
				return m
			}
			t.Fatalf("exited without showing %s", re)
		case <-deadline:
			t.Fatalf("%s not shown within 60s", re)
		}
	}
}

// wait waits for the process to end and returns its exit status.
func (r *ptyRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
		t.Fatal("still running after 60s")
		return -1
	}
}

// finalScreen is what was printed from the last header on: the screen
// the live view leaves behind.
func (r *ptyRun) finalScreen(t *testing.T) string {
	t.Helper()
	out := r.text()
	i := strings.LastIndex(out, "agentbus workflow ")
	if i < 0 {
		t.Fatal("no header printed")
	}
	return out[i:]
}

// cookedMode reports whether the terminal is in canonical (cooked) mode:
// how it was before the live view and must be again after it.
func cookedMode(t *testing.T, tty *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ICANON != 0 && tio.Lflag&unix.ECHO != 0
}

func tempFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var stepLine = regexp.MustCompile(`(?m)^[│├└─ ]*(\S) ([A-D]) .*$`)

// TestTUIAskInAPseudoTerminal runs `agentbus ask` on a terminal: the live
// view shows the running step, and the screen left behind shows every
// step completed and the answer; `watch` of the same workflow (from the
// start, and from an offset, where the states come from the checkpoint)
// ends on the same screen.
func TestTUIAskInAPseudoTerminal(t *testing.T) {
	s := startServe(t, t.TempDir())
	plan := tempFile(t, "plan.json", `{"steps":[{"id":"A","capability":"echo","input":"a"},
		{"id":"B","capability":"sleep","input":{"ms":400},"depends_on":["A"]},{"id":"C","capability":"echo","depends_on":["A"]},
		{"id":"D","capability":"echo","depends_on":["B","C"]}]}`)
	r := startPTY(t, 100, 40, "ask", "--url", s.info.HTTPURL, "--plan", plan, "pty diamond")
	r.waitScreen(t, regexp.MustCompile(`B\s+sleep\s+running`))
	if cookedMode(t, r.tty) {
		t.Error("the terminal is not in raw mode while the live view runs")
	}
	if code := r.wait(t); code != exitCompleted {
		t.Fatalf("ask exit %d", code)
	}
	if !cookedMode(t, r.tty) {
		t.Error("the terminal was not restored")
	}
	if out := r.output(); strings.LastIndex(out, "\x1b[?25h") < strings.LastIndex(out, "\x1b[?25l") {
		t.Error("the cursor was left hidden")
	}
	final := r.finalScreen(t)
	wf := regexp.MustCompile(`agentbus workflow (\S+)`).FindStringSubmatch(final)[1]
	checkFinal := func(t *testing.T, final string) {
		t.Helper()
		lines := stepLine.FindAllStringSubmatch(final, -1)
		if len(lines) != 4 {
			t.Fatalf("%d step lines in the final screen, want 4:\n%s", len(lines), final)
		}
		for _, l := range lines {
			if l[1] != "✓" || !strings.Contains(l[0], "completed") {
				t.Errorf("step %s not shown completed: %q", l[2], l[0])
			}
		}
		for _, want := range []string{"stage 2 · 2 in parallel", "← B, C", "Result", `"step_id": "D"`, `"slept_ms": 400`, "✓ completed in"} {
			if !strings.Contains(final, want) {
				t.Errorf("final screen lacks %q:\n%s", want, final)
			}
		}
	}
	checkFinal(t, final)

	last, _ := strconv.Atoi(regexp.MustCompile(`last offset (\d+)`).FindStringSubmatch(final)[1])
	for _, from := range []string{"0", strconv.Itoa(last - 3)} {
		t.Run("watch from "+from, func(t *testing.T) {
			r := startPTY(t, 100, 40, "watch", "--url", s.info.HTTPURL, "--from", from, wf)
			if code := r.wait(t); code != exitCompleted {
				t.Fatalf("watch exit %d", code)
			}
			checkFinal(t, r.finalScreen(t))
		})
	}
}

// TestTUIAskCtrlC: Ctrl-C in the live view stops following (exit status
// 3, as before), says how to pick it up again, and restores the terminal.
func TestTUIAskCtrlC(t *testing.T) {
	s := startServe(t, t.TempDir())
	plan := tempFile(t, "plan.json", `{"steps":[{"id":"A","capability":"sleep","input":{"ms":60000}},{"id":"B","capability":"echo","depends_on":["A"]}]}`)
	r := startPTY(t, 100, 30, "ask", "--url", s.info.HTTPURL, "--plan", plan, "long")
	r.waitScreen(t, regexp.MustCompile(`A\s+sleep\s+running`))
	if _, err := r.tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != exitUsage {
		t.Fatalf("exit %d after ctrl-c, want %d", code, exitUsage)
	}
	if !cookedMode(t, r.tty) {
		t.Error("the terminal was not restored")
	}
	final := r.finalScreen(t)
	wf := regexp.MustCompile(`agentbus workflow (\S+)`).FindStringSubmatch(final)[1]
	if !strings.Contains(final, "stopped following") || !strings.Contains(final, "agentbus watch "+wf) ||
		!strings.Contains(final, "context canceled") {
		t.Errorf("final screen after ctrl-c:\n%s", final)
	}
	if code, out, _ := cli(t, "cancel", "--url", s.info.HTTPURL, wf); code != exitCompleted {
		t.Errorf("cancel: exit %d %s", code, out)
	}
}

// TestTUIPlainOnATerminal: --plain on a terminal prints one line per
// event as a pipe gets them, with no escape sequence.
func TestTUIPlainOnATerminal(t *testing.T) {
	s := startServe(t, t.TempDir())
	r := startPTY(t, 100, 30, "ask", "--plain", "--url", s.info.HTTPURL, "--plan", writePlan(t), "chain")
	if code := r.wait(t); code != exitCompleted {
		t.Fatalf("exit %d", code)
	}
	out := r.output()
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape sequences in --plain output: %q", out)
	}
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(out, "\r", "")), "\n")
	if !regexp.MustCompile(`^workflow \S+ \(tenant default\)$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^\[\s*\d+\] status\s+submitted: workflow accepted`).MatchString(lines[1]) ||
		!allEventLines(lines) || !strings.Contains(out, "] complete ") {
		t.Errorf("not the line-per-event output:\n%s", out)
	}
}

// allEventLines reports whether every line after the first is an event's
// or the indented result's.
func allEventLines(lines []string) bool {
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "[") && !strings.HasPrefix(l, "       ") {
			return false
		}
	}
	return true
}

// TestTUIApprovalAndResize: the live view shows a step awaiting approval
// with the command that decides it; a resize of the terminal redraws at
// the new width, and the final screen is cut to it.
func TestTUIApprovalAndResize(t *testing.T) {
	s := startServe(t, t.TempDir())
	plan := tempFile(t, "plan.json", `{"steps":[{"id":"A","capability":"echo","input":"a"},
		{"id":"R","capability":"echo","requires_approval":true,"depends_on":["A"]},{"id":"S","capability":"echo","depends_on":["R"]}]}`)
	r := startPTY(t, 120, 40, "ask", "--url", s.info.HTTPURL, "--plan", plan, "approval")
	wf := r.waitScreen(t, regexp.MustCompile(`agentbus approve (\S+) --step R \(or --reject\)`))[1]
	if !regexp.MustCompile(`\? R\s+echo\s+awaiting approval`).MatchString(r.screen()) || strings.Contains(r.screen(), "…") {
		t.Fatalf("at 120 columns:\n%s", r.screen())
	}
	r.resize(t, 50, 40)
	r.waitScreen(t, regexp.MustCompile(`(?m)^agentbus workflow .*…$`)) // the header no longer fits
	if code, out, _ := cli(t, "approve", "--url", s.info.HTTPURL, "--step", "R", wf); code != exitCompleted {
		t.Fatalf("approve: exit %d %s", code, out)
	}
	if code := r.wait(t); code != exitCompleted {
		t.Fatalf("ask exit %d", code)
	}
	final := r.finalScreen(t)
	for _, l := range strings.Split(strings.TrimSpace(final), "\n") {
		if w := ansi.StringWidth(l); w > 50 {
			t.Errorf("final line %d wide after the resize to 50: %q", w, l)
		}
	}
	for _, want := range []string{"✓ R", "✓ S", "✓ completed"} {
		if !strings.Contains(final, want) {
			t.Errorf("final screen lacks %q:\n%s", want, final)
		}
	}
}
