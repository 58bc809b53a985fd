package datadir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// FileName is the lock file's name inside the data directory.
const FileName = "agentbus.lock"

// ErrInUse is matched (errors.Is) by the error of Acquire when another
// process holds the directory.
var ErrInUse = errors.New("datadir: data directory in use")

// Holder says which process holds a data directory: what Acquire writes into
// the lock file once it holds the lock.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Since   time.Time `json:"since"`
	Command string    `json:"command,omitempty"`
}

// String is "pid 1234 on host h since 2026-11-24T06:50:00Z".
func (h Holder) String() string {
	if h.PID == 0 {
		return "another process"
	}
	return fmt.Sprintf("pid %d on host %s since %s", h.PID, h.Host, h.Since.UTC().Format(time.RFC3339))
}

// InUseError is the error of Acquire when another process holds the
// directory. Holder is zero when the holder could not be read.
type InUseError struct {
	Dir    string
	Holder Holder
}

func (e *InUseError) Error() string {
	what := "another agentbus serve?"
	if e.Holder.Command != "" {
		what = e.Holder.Command
	}
	return fmt.Sprintf("data directory %s is in use by %s (%s)", e.Dir, e.Holder, what)
}

// Is makes errors.Is(err, ErrInUse) hold.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// Lock is a held data-directory lock. Release is safe to call more than
// once and from several goroutines.
type Lock struct {
	dir     string
	f       *os.File
	release sync.Once
	unlock  func(*os.File)
}

// Dir is the directory as given to Acquire.
func (l *Lock) Dir() string { return l.dir }

// Release truncates the lock file (so that nobody reads a stale holder) and
// gives the lock up.
func (l *Lock) Release() {
	l.release.Do(func() {
		if l.f == nil {
			return
		}
		_ = l.f.Truncate(0)
		l.unlock(l.f)
		_ = l.f.Close()
	})
}

// Acquire creates dir if needed and takes its lock for this process
// without waiting: if another process holds it, the error is an
// *InUseError naming the holder. command (e.g. "agentbus serve") is
// recorded for the message another process will see.
func Acquire(dir, command string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("datadir: lock %s: %w", dir, err)
	}
	held, err := tryLock(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("datadir: lock %s: %w", dir, err)
	}
	if !held {
		_ = f.Close()
		return nil, &InUseError{Dir: dir, Holder: awaitHolder(path)}
	}
	host, _ := os.Hostname()
	h := Holder{PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second), Command: command}
	b, _ := json.Marshal(h)
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	if err != nil {
		unlock(f)
		_ = f.Close()
		return nil, fmt.Errorf("datadir: lock %s: %w", dir, err)
	}
	return &Lock{dir: dir, f: f, unlock: unlock}, nil
}

// ReadHolder reads the holder recorded in dir's lock file: the current one
// while the directory is locked; after a crash, the dead one's (which no
// longer blocks anything).
func ReadHolder(dir string) (Holder, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return Holder{}, fmt.Errorf("datadir: %w", err)
	}
	var h Holder
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(b))), &h); err != nil {
		return Holder{}, fmt.Errorf("datadir: %s: %w", FileName, err)
	}
	return h, nil
}

// awaitHolder reads the holder of a locked file. The holder writes it just
// after locking, so a reader that comes in between sees an empty file:
// read again for a short while before giving up on naming it.
func awaitHolder(path string) Holder {
	deadline := time.Now().Add(250 * time.Millisecond)
	for {
		if h, err := ReadHolder(filepath.Dir(path)); err == nil {
			return h
		}
		if time.Now().After(deadline) {
			return Holder{}
		}
		time.Sleep(10 * time.Millisecond)
	}
}
