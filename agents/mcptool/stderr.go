package mcptool

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// logWriter logs each line written to it, a stdio server's standard
// error, at Info; a line longer than logLineMax is logged in pieces. Safe
// for concurrent use.
type logWriter struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

const logLineMax = 4096

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 && len(w.buf) < logLineMax {
			return len(p), nil
		}
		if i < 0 {
			i = logLineMax
		}
		if line := bytes.TrimRight(w.buf[:i], "\r"); len(line) > 0 {
			w.log.LogAttrs(context.Background(), slog.LevelInfo, "mcp server stderr", slog.String("line", string(line)))
		}
		w.buf = w.buf[min(i+1, len(w.buf)):]
	}
}
