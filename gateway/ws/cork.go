package ws

import (
	"bufio"
	"net"
	"net/http"
	"sync"
)

// corkLimit bounds what a corked connection holds before it writes anyway.
const corkLimit = 32 << 10

// corkConn is a hijacked WebSocket connection that can hold its writes
// ("cork", as TCP_CORK) and send them in one write ("uncork"). The writer
// corks while it writes a batch of queued frames and uncorks when the queue
// is empty: coder/websocket flushes every message to the socket, and a
// subscriber of a busy workflow would otherwise cost one system call per
// frame. Writes from other goroutines (pongs, pings, the close frame) are
// held with the batch while corked and go straight out otherwise. Safe for
// concurrent use.
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	buf    []byte
}

// Write holds p while corked (writing everything once the held bytes pass
// corkLimit), else writes it.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return c.Conn.Write(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= corkLimit {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork writes what was held and lets later writes through.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.flushLocked()
}

func (c *corkConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > corkLimit*2 {
		c.buf = nil // a burst's buffer is not kept by an idle connection
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// corkWriter is the ResponseWriter a WebSocket is accepted through: its
// Hijack hands coder/websocket a corkConn.
type corkWriter struct {
	http.ResponseWriter
	conn *corkConn
}

func (w *corkWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	nc, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &corkConn{Conn: nc}
	// coder/websocket writes through brw.Writer (a fresh, empty one after
	// a hijack): point it at the corkConn too.
	brw.Writer.Reset(w.conn)
	return w.conn, brw, nil
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *corkWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
