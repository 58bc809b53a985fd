package a2a

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeRPC feeds arbitrary bodies to the JSON-RPC decoder and the
// params decoders behind it: none may panic, every error must be one of
// the JSON-RPC codes and marshal to JSON, and an accepted request has a
// method and an id that is JSON.
func FuzzDecodeRPC(f *testing.F) {
	for _, s := range []string{
		``, `{`, `[]`, `null`, `"x"`, `{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"abc","historyLength":2}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tasks/cancel","params":{"id":7}}`,
		`{"jsonrpc":"2.0","id":null,"method":"message/send","params":{"message":{"role":"user","messageId":"m","parts":[{"kind":"text","text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":-1.5e3,"method":"message/stream","params":{"message":{"role":"user","messageId":"m","taskId":"t","parts":[{"kind":"data","data":{"plan":{"steps":[{"id":"a","capability":"echo"}]},"timeout_ms":10}}]},"configuration":{"blocking":false,"historyLength":0,"acceptedOutputModes":["text/plain"]}}}`,
		`{"jsonrpc":"2.0","id":true,"method":"x"}`,
		`{"jsonrpc":"2.0","id":"b","method":"message/send","params":{"message":{"role":"user","messageId":"m","parts":[{"data":{"approve":false}},{"type":"text","text":"no"},{"kind":"file","file":{}}]}}}`,
		`{"id":"x","message":{"parts":[{"text":"q"}]},"stream":true}`,
	} {
		f.Add([]byte(s))
	}
	known := map[int]bool{}
	for c := range rpcMessages {
		known[c] = true
	}
	check := func(t *testing.T, where string, e *rpcError) {
		if e == nil {
			return
		}
		if !known[e.Code] {
			t.Fatalf("%s: unknown code %d", where, e.Code)
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("%s: error does not marshal: %v", where, err)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, rerr := decodeRPC(body)
		check(t, "decodeRPC", rerr)
		if !json.Valid(req.ID) {
			t.Fatalf("id %q is not JSON", req.ID)
		}
		if rerr == nil {
			if req.Method == "" {
				t.Fatal("accepted a request without a method")
			}
			if req.Params != nil && !json.Valid(req.Params) {
				t.Fatalf("params %q are not JSON", req.Params)
			}
		}
		sr, e := decodeSend(req.Params)
		check(t, "decodeSend", e)
		if e == nil {
			in, e := decodeParts(sr.parts, "/params/message/parts")
			check(t, "decodeParts", e)
			if e == nil {
				_, e = in.submission("", map[string]string{metaMessageID: sr.messageID}, "/params/message/taskId")
				check(t, "submission", e)
			}
			_, e = decodeDecision(sr.parts, "/params/message/parts")
			check(t, "decodeDecision", e)
		}
		_, _, e = decodeTaskID(req.Params)
		check(t, "decodeTaskID", e)
		_, e = decodeTasksSend(body)
		check(t, "decodeTasksSend", e)
	})
}
