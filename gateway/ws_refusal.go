package gateway

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

// answer writes the held refusal, if there is one, in the error shape.
func (w *refusalWriter) answer(r *http.Request) {
	if w.status == 0 {
		return
	}
	msg := strings.TrimSpace(w.msg.String())
	e := apiError{Code: "invalid_request", Message: "websocket handshake refused: " + msg}
	switch w.status {
	case http.StatusForbidden:
		e.Code = "forbidden"
		e.Problems = []Problem{headerProblem("Origin", "%s is neither this gateway's origin nor one of its --cors-origins", quoted(r.Header.Get("Origin")))}
	case http.StatusUpgradeRequired:
		e.Code = "upgrade_required"
		e.Problems = []Problem{headerProblem("Upgrade", "%s", msg)}
	}
	writeError(w.corkWriter, w.status, e)
}
