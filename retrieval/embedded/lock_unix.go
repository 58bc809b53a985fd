//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDir takes an exclusive lock on dir for this process, so that a
// second process opening the same index fails at once with ErrLocked
// rather than blocking inside bleve on its first search. The lock ends
// with the returned release or the process.
func lockDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("embedded: lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := strings.TrimSpace(string(b))
			if holder == "" {
				holder = "another process"
			} else {
				holder = "process " + holder
			}
			return nil, fmt.Errorf("%w: %s is open in %s (one process per index directory; with several, use --search-backend vespa)", ErrLocked, dir, holder)
		}
		return nil, fmt.Errorf("embedded: lock %s: %w", dir, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
