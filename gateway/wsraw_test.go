package gateway_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
)

// rawWS is a minimal WebSocket client (RFC 6455) for the fan-out
// benchmark's client process: a thousand of them share the machine with
// the server being measured, so each reads frames straight off a buffered
// socket into one reused buffer. It handles what the gateway sends:
// unfragmented text frames, close, ping (ignored: a benchmark ends well
// within the ping interval).
type rawWS struct {
	c   net.Conn
	r   *bufio.Reader
	buf []byte
}

// dialRawWS opens a WebSocket to u (ws://host/path?query).
func dialRawWS(ctx context.Context, u string) (*rawWS, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", pu.Host)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", pu.RequestURI(), pu.Host, base64.StdEncoding.EncodeToString(key))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	r := bufio.NewReaderSize(c, 32<<10)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("handshake: %s", resp.Status)
	}
	return &rawWS{c: c, r: r, buf: make([]byte, 0, 4096)}, nil
}

// next returns the next text message (valid until the next call), or
// io.EOF after a normal close.
func (w *rawWS) next() ([]byte, error) {
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.r, h[:]); err != nil {
			return nil, err
		}
		op, n := h[0]&0x0f, uint64(h[1]&0x7f)
		switch n {
		case 126:
			var e [2]byte
			if _, err := io.ReadFull(w.r, e[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(e[:]))
		case 127:
			var e [8]byte
			if _, err := io.ReadFull(w.r, e[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(e[:])
		}
		if n > 16<<20 {
			return nil, fmt.Errorf("frame of %d bytes", n)
		}
		if uint64(cap(w.buf)) < n {
			w.buf = make([]byte, n)
		}
		b := w.buf[:n]
		if _, err := io.ReadFull(w.r, b); err != nil {
			return nil, err
		}
		switch op {
		case 0x1:
			return b, nil
		case 0x8:
			if len(b) >= 2 && binary.BigEndian.Uint16(b) == 1000 {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("closed: %q", b)
		}
	}
}

func (w *rawWS) close() { _ = w.c.Close() }
