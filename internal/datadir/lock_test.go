package datadir

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestAcquireRefusesSecondWithHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // Acquire creates it
	l, err := Acquire(dir, "agentbus serve")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = Acquire(dir, "agentbus index")
	var inUse *InUseError
	if !errors.As(err, &inUse) || !errors.Is(err, ErrInUse) {
		t.Fatalf("second Acquire: %v, want an *InUseError", err)
	}
	host, _ := os.Hostname()
	h := inUse.Holder
	if h.PID != os.Getpid() || h.Host != host || h.Command != "agentbus serve" || time.Since(h.Since) > time.Minute {
		t.Fatalf("holder %+v, want this process on %s now", h, host)
	}
	msg := err.Error()
	for _, want := range []string{"data directory " + dir + " is in use by pid ", " on host " + host + " since ", h.Since.Format(time.RFC3339), "(agentbus serve)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestReleaseLetsTheNextAcquire(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	l.Release() // twice is fine
	if _, err := ReadHolder(dir); err == nil {
		t.Error("a released lock file still names a holder")
	}
	l2, err := Acquire(dir, "")
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l2.Release()
}

// TestStaleFileDoesNotBlock: a lock file naming a holder that no longer
// holds the lock (it crashed) is taken over and rewritten.
func TestStaleFileDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	stale, _ := json.Marshal(Holder{PID: 999999, Host: "gone", Since: time.Now().Add(-time.Hour)})
	if err := os.WriteFile(filepath.Join(dir, FileName), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(dir, "")
	if err != nil {
		t.Fatalf("stale lock file blocked Acquire: %v", err)
	}
	defer l.Release()
	if h, err := ReadHolder(dir); err != nil || h.PID != os.Getpid() {
		t.Fatalf("holder %+v, %v: want this process", h, err)
	}
}

func TestInUseWithoutHolder(t *testing.T) {
	err := &InUseError{Dir: "./data"}
	if got, want := err.Error(), "data directory ./data is in use by another process (another agentbus serve?)"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

// TestKilledHolderReleases locks in a child process, sees the lock
// refused naming the child, kills it with SIGKILL and takes the lock.
func TestKilledHolderReleases(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("flock")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHolder$")
	cmd.Env = append(os.Environ(), "DATADIR_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	locked := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "locked" {
				locked <- true
				return
			}
		}
		locked <- false
	}()
	select {
	case ok := <-locked:
		if !ok {
			t.Fatal("helper exited without locking")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("helper did not lock within 30s")
	}
	var inUse *InUseError
	if _, err := Acquire(dir, ""); !errors.As(err, &inUse) || inUse.Holder.PID != cmd.Process.Pid {
		t.Fatalf("Acquire while the helper holds: %v, want in use by pid %d", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	l, err := Acquire(dir, "")
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	l.Release()
}

// TestHelperHolder is the child of TestKilledHolderReleases: it locks and
// waits to be killed.
func TestHelperHolder(t *testing.T) {
	dir := os.Getenv("DATADIR_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	if _, err := Acquire(dir, "helper"); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	time.Sleep(time.Hour) // until killed
}
