package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
)

// rpcReply is a JSON-RPC response as read off the wire.
type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Error    string `json:"error"`
			Pointer  string `json:"pointer"`
			Problems []struct {
				Pointer string `json:"pointer"`
			} `json:"problems"`
		} `json:"data"`
	} `json:"error"`
}

func sendBody(message string) string {
	return `{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{"message":` + message + `}}`
}

func TestA2AJSONRPCErrors(t *testing.T) {
	s := startStack(t)
	for _, tc := range []struct {
		name, body string
		code       int
		pointer    string
		id         string
	}{
		{"not JSON", `{"jsonrpc": "2.0", "id": 1,`, -32700, "", "null"},
		{"empty body", ``, -32700, "", "null"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tasks/get"}]`, -32600, "", "null"},
		{"not an object", `"tasks/get"`, -32600, "", "null"},
		{"old version", `{"jsonrpc":"1.0","id":1,"method":"tasks/get"}`, -32600, "/jsonrpc", "1"},
		{"notification", `{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"x"}}`, -32600, "/id", "null"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tasks/get"}`, -32600, "/id", "null"},
		{"no method", `{"jsonrpc":"2.0","id":"m"}`, -32600, "/method", `"m"`},
		{"unknown method", `{"jsonrpc":"2.0","id":42,"method":"tasks/list"}`, -32601, "/method", "42"},
		{"params not an object", `{"jsonrpc":"2.0","id":"p","method":"tasks/get","params":["x"]}`, -32602, "/params", `"p"`},
		{"get without id", `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{}}`, -32602, "/params/id", `"g"`},
		{"get with a number id", `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":5}}`, -32602, "/params/id", `"g"`},
		{"negative history", `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"x","historyLength":-1}}`, -32602, "/params/historyLength", `"g"`},
		{"unknown task", `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"nope"}}`, -32001, "/params/id", `"g"`},
		{"no message", `{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{}}`, -32602, "/params/message", `"r1"`},
		{"agent role", sendBody(`{"role":"agent","messageId":"m","parts":[{"kind":"text","text":"q"}]}`), -32602, "/params/message/role", `"r1"`},
		{"no message id", sendBody(`{"role":"user","parts":[{"kind":"text","text":"q"}]}`), -32602, "/params/message/messageId", `"r1"`},
		{"no parts", sendBody(`{"role":"user","messageId":"m","parts":[]}`), -32602, "/params/message/parts", `"r1"`},
		{"text part without text", sendBody(`{"role":"user","messageId":"m","parts":[{"kind":"text"}]}`), -32602, "/params/message/parts/0/text", `"r1"`},
		{"unknown part kind", sendBody(`{"role":"user","messageId":"m","parts":[{"kind":"text","text":"q"},{"kind":"video"}]}`), -32602, "/params/message/parts/1/kind", `"r1"`},
		{"part of the wrong type", sendBody(`{"role":"user","messageId":"m","parts":[{"kind":"text","text":7}]}`), -32602, "/params/message/parts/0/text", `"r1"`},
		{"data part field", sendBody(`{"role":"user","messageId":"m","parts":[{"kind":"data","data":{"plan":{"steps":[]},"colour":"red"}}]}`), -32602, "/params/message/parts/0/data/colour", `"r1"`},
		{"bad plan", sendBody(`{"role":"user","messageId":"m","parts":[{"kind":"data","data":{"plan":{"steps":[{"id":"a","capability":"Not A Token"}]}}}]}`), -32602, "/params/message/parts/0/data/plan/steps/0/capability", `"r1"`},
		{"neither query nor plan", sendBody(`{"role":"user","messageId":"m","parts":[{"kind":"data","data":{"timeout_ms":5}}]}`), -32602, "/params/message/parts", `"r1"`},
		{"file part", sendBody(`{"role":"user","messageId":"m","parts":[{"kind":"file","file":{"uri":"https://x/y"}}]}`), -32005, "/params/message/parts/0/file/uri", `"r1"`},
		{"push config", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/get","params":{"id":"x"}}`, -32003, "/method", "1"},
		{"extended card", `{"jsonrpc":"2.0","id":1,"method":"agent/getAuthenticatedExtendedCard"}`, -32007, "/method", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodPost, "/a2a", []byte(tc.body))
			if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d %s: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
			}
			var rep rpcReply
			if err := json.Unmarshal(r.Body, &rep); err != nil {
				t.Fatalf("%v: %s", err, r.Body)
			}
			if rep.JSONRPC != "2.0" || rep.Error == nil || rep.Result != nil {
				t.Fatalf("not a JSON-RPC error: %s", r.Body)
			}
			if rep.Error.Code != tc.code || rep.Error.Data.Pointer != tc.pointer || string(rep.ID) != tc.id || rep.Error.Message == "" {
				t.Errorf("code %d pointer %q id %s, want %d %q %s: %s", rep.Error.Code, rep.Error.Data.Pointer, rep.ID, tc.code, tc.pointer, tc.id, r.Body)
			}
			if tc.name == "bad plan" && (len(rep.Error.Data.Problems) == 0 || rep.Error.Data.Problems[0].Pointer != tc.pointer) {
				t.Errorf("schema problems %+v", rep.Error.Data.Problems)
			}
		})
	}
}

// The streaming methods answer errors as an SSE event, where stream
// clients look for them.
func TestA2AStreamErrorIsAnEvent(t *testing.T) {
	s := startStack(t)
	st, err := s.readSSE(ctxT(t), "/a2a", nil)
	if err != nil || st.Status != http.StatusMethodNotAllowed {
		t.Fatalf("GET /a2a: %v %d", err, st.Status)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":"s","method":"message/stream","params":{"message":{"role":"user","messageId":"m","parts":[]}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"tasks/resubscribe","params":{"id":"nope"}}`,
	} {
		r := s.mustDo(t, http.MethodPost, "/a2a", []byte(body))
		data, ok := strings.CutPrefix(strings.TrimSpace(string(r.Body)), "data: ")
		if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "text/event-stream" || !ok {
			t.Fatalf("%s: status %d %s: %s", body, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		var rep rpcReply
		if err := json.Unmarshal([]byte(data), &rep); err != nil || rep.Error == nil || string(rep.ID) != `"s"` {
			t.Errorf("%s: %v %s", body, err, data)
		}
	}
}

func TestA2AOversizeBody(t *testing.T) {
	s := startStack(t, func(c *gateway.Config) { c.MaxBodyBytes = 1024 })
	r := s.mustDo(t, http.MethodPost, "/a2a", []byte(sendBody(`{"role":"user","messageId":"m","parts":[{"kind":"text","text":"`+strings.Repeat("x", 2000)+`"}]}`)))
	if r.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
}
