package gateway_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentbus/agentbus/gateway"
)

func TestTasksSend(t *testing.T) {
	s := startStack(t)
	r := s.mustDo(t, http.MethodPost, "/tasks/send", []byte(`{"id":"legacy-1","sessionId":"s1","message":{"role":"user","parts":[{"type":"text","text":"hello seed"}]}}`))
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var task a2a.Task
	if err := json.Unmarshal(r.Body, &task); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
	if task.ID != "legacy-1" || task.ContextID != "s1" || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("task %s context %s state %s artifacts %d", task.ID, task.ContextID, task.Status.State, len(task.Artifacts))
	}
	if d := resultData(t, task.Artifacts[0]); !strings.Contains(string(mustMarshal(t, d)), "hello seed") {
		t.Errorf("result %v", d)
	}
	// The same workflow on the REST surface; the id is taken now.
	if st := s.state(t, "/v1/workflows/legacy-1"); st["status"] != "completed" {
		t.Errorf("REST state %v", st["status"])
	}
	if r := s.mustDo(t, http.MethodPost, "/tasks/send", []byte(`{"id":"legacy-1","message":{"parts":[{"text":"again"}]}}`)); r.Status != http.StatusConflict {
		t.Errorf("same id again: %d %s", r.Status, r.Body)
	}
}

func TestTasksSendStream(t *testing.T) {
	s := startStack(t)
	body := `{"message":{"parts":[{"data":{"plan":` + string(mustMarshal(t, plan("A:echo", "B:echo:A"))) + `}}]},"stream":true}`
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, s.base+"/tasks/send", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json") // a write's body must say it is JSON
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var kinds []string
	var prevID uint64
	var last a2a.TaskStatusUpdateEvent
	for _, block := range strings.Split(strings.TrimSpace(readAll(t, resp)), "\n\n") {
		var id, event, data string
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "id":
				id = v
			case "event":
				event = v
			case "data":
				data = v
			}
		}
		if event == "" {
			continue // a keepalive comment
		}
		ev, err := a2a.UnmarshalEventJSON([]byte(data))
		if err != nil || eventKindOf(ev) != event {
			t.Fatalf("event %q: %v %s", event, err, data)
		}
		if id != "" {
			n, err := strconv.ParseUint(id, 10, 64)
			if err != nil || n < prevID {
				t.Fatalf("id %q after %d", id, prevID)
			}
			prevID = n
		}
		kinds = append(kinds, event)
		if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			last = *su
		}
	}
	if len(kinds) < 4 || kinds[0] != "task" || kinds[len(kinds)-2] != "artifact-update" || kinds[len(kinds)-1] != "status-update" {
		t.Fatalf("events %v", kinds)
	}
	if !last.Final || last.Status.State != a2a.TaskStateCompleted {
		t.Errorf("last status %+v", last)
	}
}

func TestTasksSendBadBody(t *testing.T) {
	s := startStack(t)
	for _, tc := range []struct{ body, pointer string }{
		{`{"message":{"parts":[]}}`, "/message/parts"},
		{`{"message":{"parts":[{"text":5}]}}`, "/message/parts/0/text"},
		{`{"message":{"parts":[{"text":"q"}]},"colour":1}`, "/colour"},
		{`{"id":"Not A Token","message":{"parts":[{"text":"q"}]}}`, "/id"},
		{`{"stream":true}`, "/message"},
		{`{"message":{"parts":"q"}}`, "/message/parts"},
	} {
		r := s.mustDo(t, http.MethodPost, "/tasks/send", []byte(tc.body))
		var e apiErr
		if err := json.Unmarshal(r.Body, &e); err != nil || r.Status != http.StatusBadRequest {
			t.Errorf("%s: status %d %v: %s", tc.body, r.Status, err, r.Body)
			continue
		}
		if len(e.Error.Problems) == 0 || e.Error.Problems[0].Pointer != tc.pointer {
			t.Errorf("%s: problems %+v, want pointer %s", tc.body, e.Error.Problems, tc.pointer)
		}
	}
}

func eventKindOf(ev a2a.Event) string {
	switch ev.(type) {
	case *a2a.Task:
		return "task"
	case *a2a.TaskStatusUpdateEvent:
		return "status-update"
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact-update"
	}
	return "message"
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
	return string(b)
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTasksSendSeedShape sends the seed system's body: messages whose
// last is the query, with a data part of search options; the earlier
// messages become the session's turns.
func TestTasksSendSeedShape(t *testing.T) {
	s := startStack(t)
	body := `{"id":"t1","messages":[` +
		`{"role":"user","parts":[{"type":"text","text":"what is JetStream?"}]},` +
		`{"role":"agent","parts":[{"type":"text","text":"A persistence layer for NATS."}]},` +
		`{"role":"user","parts":[{"type":"text","text":"hello seed"},{"type":"data","data":{"top_k":20}}]}]}`
	r := s.mustDo(t, http.MethodPost, "/tasks/send", []byte(body))
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var task a2a.Task
	if err := json.Unmarshal(r.Body, &task); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
	if task.ID != "t1" || task.Status.State != a2a.TaskStateCompleted || task.ContextID == "" || task.ContextID == "t1" {
		t.Fatalf("task %s context %q state %s", task.ID, task.ContextID, task.Status.State)
	}
	st := s.state(t, "/v1/workflows/t1")
	meta, _ := st["metadata"].(map[string]any)
	if meta["search_options"] != `{"k":20}` || st["query"] != "hello seed" {
		t.Errorf("query %v metadata %v", st["query"], meta)
	}
	// The session holds the earlier exchange as its first turn, then the task.
	sess := s.state(t, "/v1/sessions/"+task.ContextID)
	turns, _ := sess["turns"].([]any)
	if len(turns) == 0 {
		t.Fatalf("session %v", sess)
	}
	first, _ := turns[0].(map[string]any)
	if first["query"] != "what is JetStream?" || first["answer"] != "A persistence layer for NATS." {
		t.Errorf("first turn %v", first)
	}

	// The plain seed body: one message, no id.
	r = s.mustDo(t, http.MethodPost, "/tasks/send", []byte(`{"messages":[{"role":"user","parts":[{"type":"text","text":"hi"},{"type":"data","data":{"top_k":20,"profiles":["bm25"]}}]}]}`))
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
}

func TestHealthAndAgentJSON(t *testing.T) {
	s := startStack(t)
	for _, path := range []string{"/health", "/healthz", "/.well-known/agent.json", "/.well-known/agent-card.json"} {
		r := s.mustDo(t, http.MethodGet, path, nil)
		if r.Status != http.StatusOK {
			t.Errorf("%s: status %d: %s", path, r.Status, r.Body)
		}
	}
	var card a2a.AgentCard
	if r := s.mustDo(t, http.MethodGet, "/.well-known/agent.json", nil); json.Unmarshal(r.Body, &card) != nil || card.Name == "" || !strings.HasSuffix(card.URL, "/a2a") {
		t.Errorf("card %+v", card)
	}
}

func TestTasksSendSeedRefusals(t *testing.T) {
	s := startStack(t, func(c *gateway.Config) { c.Documents.MaxUploadBytes = 1024 })
	big := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("a"), 2000))
	msgs := func(parts ...string) string {
		return `{"id":"t1","messages":[{"role":"user","parts":[{"type":"text","text":"q"},` + strings.Join(parts, ",") + `]}]}`
	}
	for _, tc := range []struct {
		name, body, pointer, says string
		status                    int // default 400
	}{
		{"unknown data key", msgs(`{"type":"data","data":{"top_k":20,"colour":"red"}}`), "/messages/0/parts/1/data/colour", `unknown key "colour"`, 0},
		{"top_k out of range", msgs(`{"type":"data","data":{"top_k":500}}`), "/messages/0/parts/1/data/top_k", "100", 0},
		{"bad profile", msgs(`{"type":"data","data":{"profiles":["Not A Profile"]}}`), "/messages/0/parts/1/data/profiles/0", "", 0},
		{"top_k and k", msgs(`{"type":"data","data":{"top_k":5,"k":6}}`), "", "already sets k", 0},
		{"file too large", msgs(`{"type":"file","file":{"name":"big.txt","mimeType":"text/plain","bytes":"` + big + `"}}`), "/messages/0/parts/1/file/bytes", `"big.txt" is too large`, 0},
		{"file by uri", msgs(`{"type":"file","file":{"name":"a.txt","uri":"https://example.com/a.txt"}}`), "/messages/0/parts/1/file/uri", "not fetched", http.StatusUnsupportedMediaType},
		{"file without name", msgs(`{"kind":"file","file":{"bytes":"aGk="}}`), "/messages/0/parts/1/file/name", "", 0},
		{"options beside a plan", `{"messages":[{"parts":[{"data":{"plan":{"steps":[{"id":"A","capability":"echo"}]},"top_k":3}}]}]}`, "/messages/0/parts/0/data/top_k", "explicit plan", 0},
		{"last message not the user's", `{"messages":[{"role":"user","parts":[{"text":"q"}]},{"role":"agent","parts":[{"text":"a"}]}]}`, "/messages/1/role", "the last message is the query", 0},
		{"data in an earlier message", `{"messages":[{"role":"user","parts":[{"text":"q"},{"data":{"top_k":3}}]},{"role":"user","parts":[{"text":"q2"}]}]}`, "/messages/0/parts/1/data", "only the last message", 0},
		{"message and messages", `{"message":{"parts":[{"text":"q"}]},"messages":[{"parts":[{"text":"q"}]}]}`, "/messages", "not both", 0},
		{"no messages", `{"messages":[]}`, "/messages", "", 0},
		{"bad session for a conversation", `{"sessionId":"Not A Token","messages":[{"role":"user","parts":[{"text":"q"}]},{"role":"user","parts":[{"text":"q2"}]}]}`, "/sessionId", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodPost, "/tasks/send", []byte(tc.body))
			var e apiErr
			if tc.status == 0 {
				tc.status = http.StatusBadRequest
			}
			if err := json.Unmarshal(r.Body, &e); err != nil || r.Status != tc.status {
				t.Fatalf("status %d %v: %s", r.Status, err, r.Body)
			}
			want := tc.pointer
			if want == "" { // the second of top_k and k, whichever map order met last
				want = e.Error.Problems[0].Pointer
				if want != "/messages/0/parts/1/data/k" && want != "/messages/0/parts/1/data/top_k" {
					t.Errorf("pointer %s", want)
				}
			}
			if len(e.Error.Problems) == 0 || e.Error.Problems[0].Pointer != want || !strings.Contains(e.Error.Message, tc.says) {
				t.Errorf("error %+v, want pointer %s saying %q", e.Error, want, tc.says)
			}
		})
	}
}

// TestTasksSendFilePart indexes a file part in the tenant's index before
// the task runs, through the upload path of POST /v1/documents.
func TestTasksSendFilePart(t *testing.T) {
	s := startDocStack(t)
	doc := base64.StdEncoding.EncodeToString([]byte("# Quokkas\n\nQuokkas eat leaves, grasses and stems on Rottnest Island.\n"))
	body := `{"id":"t-file","messages":[{"role":"user","parts":[{"type":"text","text":"echo what do quokkas eat"},` +
		`{"type":"file","file":{"name":"quokka.md","mimeType":"text/markdown","bytes":"` + doc + `"}}]}]}`
	r := s.mustDo(t, http.MethodPost, "/tasks/send", []byte(body))
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	meta, _ := s.state(t, "/v1/workflows/t-file")["metadata"].(map[string]any)
	up, _ := meta["a2a_upload"].(string)
	if up == "" {
		t.Fatalf("metadata %v", meta)
	}
	if st := s.state(t, "/v1/workflows/"+up); st["status"] != "completed" {
		t.Errorf("ingest workflow %s: %v", up, st["status"])
	}
	if r := s.mustDo(t, http.MethodGet, "/v1/documents/quokka.md", nil); r.Status != http.StatusOK {
		t.Errorf("document: %d %s", r.Status, r.Body)
	}
}
