package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
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
