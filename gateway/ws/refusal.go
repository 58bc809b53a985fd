package ws

import (
	"net/http"
	"strings"
)

// refusalWriter is the writer a WebSocket handshake is accepted through. It
// holds back the text/plain refusal coder/websocket writes with http.Error
// (403 for an Origin not allowed, 426 for a request that is no upgrade, …)
// so that answer can go out in the API's error shape instead; everything
// else, the upgrade included, passes through.
type refusalWriter struct {
	*corkWriter
	status int
	msg    strings.Builder
}

func (w *refusalWriter) WriteHeader(code int) {
	if code >= 400 && w.status == 0 {
		w.status = code
		return
	}
	w.corkWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.msg.Write(b)
	}
	return w.corkWriter.Write(b)
}

// answer writes the held refusal, if there is one, in the gateway's error
// shape.
func (w *refusalWriter) answer(r *http.Request, gw Gateway) {
	if w.status == 0 {
		return
	}
	gw.Refuse(w.corkWriter, r, w.status, strings.TrimSpace(w.msg.String()))
}
