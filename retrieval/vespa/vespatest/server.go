package vespatest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Dim is the embedding dimension of the fake's schema, as in
// schemas/vespa.
const Dim = 256

// QueryError is one entry of root.errors.
type QueryError struct {
	Code    int    `json:"code"`
	Summary string `json:"summary"`
	Source  string `json:"source,omitempty"`
	Message string `json:"message"`
}

// Fault changes how the next Times requests of one kind are answered.
type Fault struct {
	// Status is the HTTP status to answer with; 0 means the normal one.
	Status int
	// Message is a Document v1 error's "message".
	Message string
	// Errors are a query answer's root.errors (with Status, default 200).
	Errors []QueryError
	// PartialPercent, when in 1..99, answers a query normally but over
	// only that share of the documents, with coverage.full=false and
	// degraded.timeout=true.
	PartialPercent int
	// RetryAfter, when > 0, is sent as the Retry-After header (seconds).
	RetryAfter int
	// Times is how many requests the fault applies to; default 1.
	Times int
}

// Server is a fake Vespa container. It is safe for concurrent use.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	deployed map[string]bool // nil: every document type exists
	page     int             // documents per visit or delete response; 0 means 7
	docs     map[string]map[string]map[string]any
	feedF    []Fault
	queryF   []Fault
	feeds    int
	requests []string // Document v1 requests, "METHOD path?query"
	queries  []map[string]any
}

// New starts a fake Vespa that accepts every document type, closed when
// the test ends.
func New(t testing.TB) *Server {
	s := &Server{docs: make(map[string]map[string]map[string]any)}
	mux := http.NewServeMux()
	mux.HandleFunc("/document/v1/", s.document)
	mux.HandleFunc("POST /search/", s.search)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Deploy restricts the known document types to doctypes, as an
// application package listing them would; feeds and queries to others
// fail as they do on Vespa.
func (s *Server) Deploy(doctypes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deployed = make(map[string]bool, len(doctypes))
	for _, d := range doctypes {
		s.deployed[d] = true
	}
}

// FailFeeds queues a fault for the next Document v1 requests.
func (s *Server) FailFeeds(f Fault) { s.queue(&s.feedF, f) }

// FailQueries queues a fault for the next Query API requests.
func (s *Server) FailQueries(f Fault) { s.queue(&s.queryF, f) }

func (s *Server) queue(q *[]Fault, f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	*q = append(*q, f)
}

// next pops one use of the first queued fault.
func next(q *[]Fault) (Fault, bool) {
	if len(*q) == 0 {
		return Fault{}, false
	}
	f := (*q)[0]
	(*q)[0].Times--
	if (*q)[0].Times == 0 {
		*q = (*q)[1:]
	}
	return f, true
}

// Feeds is how many Document v1 requests arrived, failed ones included.
func (s *Server) Feeds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.feeds
}

// DocumentRequests returns the Document v1 requests received, in order,
// as "METHOD /document/v1/…?query" (the query escaped as sent).
func (s *Server) DocumentRequests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// Queries returns the Query API request bodies received, in order.
func (s *Server) Queries() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.queries...)
}

// Doc returns a stored document's fields, as fed.
func (s *Server) Doc(doctype, id string) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[doctype][id]
	return d, ok
}

func (s *Server) known(doctype string) bool {
	return s.deployed == nil || s.deployed[doctype]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fields is the schema's document fields (schemas/vespa).
var fields = map[string]bool{
	"id": true, "doc_id": true, "title": true, "text": true, "source": true,
	"metadata": true, "metadata_json": true, "date": true, "embedding": true,
	"gen": true, "indexed": true,
}

// document serves /document/v1/<namespace>/<doctype>/docid/<id> (POST
// puts, GET gets).
func (s *Server) document(w http.ResponseWriter, r *http.Request) {
	pathID := r.URL.EscapedPath()
	docErr := func(status int, msg string) {
		writeJSON(w, status, map[string]string{"pathId": pathID, "message": msg})
	}
	parts := strings.Split(strings.TrimPrefix(pathID, "/document/v1/"), "/")
	if (len(parts) == 3 || (len(parts) == 4 && parts[3] == "")) && parts[2] == "docid" {
		s.collection(w, r, parts[0], parts[1])
		return
	}
	if len(parts) != 4 || parts[2] != "docid" || parts[3] == "" {
		docErr(http.StatusBadRequest, "Expected /document/v1/<namespace>/<documentType>/docid/<documentId>")
		return
	}
	ns, doctype := parts[0], parts[1]
	id, err := url.PathUnescape(parts[3])
	if err != nil {
		docErr(http.StatusBadRequest, "Invalid document id: "+err.Error())
		return
	}
	docID := fmt.Sprintf("id:%s:%s::%s", ns, doctype, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.admit(w, r, doctype, docErr) {
		return
	}
	switch r.Method {
	case http.MethodGet:
		d, ok := s.docs[doctype][id]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"pathId": pathID, "id": docID})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"pathId": pathID, "id": docID, "fields": d})
	case http.MethodPost:
		doc, status, msg := decodePut(r.Body, doctype)
		if status != http.StatusOK {
			docErr(status, msg)
			return
		}
		if s.docs[doctype] == nil {
			s.docs[doctype] = make(map[string]map[string]any)
		}
		s.docs[doctype][id] = doc
		writeJSON(w, http.StatusOK, map[string]string{"pathId": pathID, "id": docID})
	default:
		docErr(http.StatusMethodNotAllowed, "Method "+r.Method+" not supported here")
	}
}

// admit counts and records a Document v1 request and answers it with a
// queued fault or, for an unknown document type, Vespa's error; it
// reports whether the request is to be served. The caller holds s.mu.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, doctype string, docErr func(int, string)) bool {
	s.feeds++
	s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
	if f, ok := next(&s.feedF); ok {
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(f.RetryAfter))
		}
		docErr(f.Status, f.Message)
		return false
	}
	if !s.known(doctype) {
		docErr(http.StatusBadRequest, fmt.Sprintf("Document type %s does not exist", doctype))
		return false
	}
	return true
}

// decodePut checks a put body against the schema as Vespa would.
func decodePut(body io.Reader, doctype string) (map[string]any, int, string) {
	var put struct {
		Fields map[string]any `json:"fields"`
	}
	if err := json.NewDecoder(body).Decode(&put); err != nil {
		return nil, http.StatusBadRequest, "Could not parse document: " + err.Error()
	}
	for name := range put.Fields {
		if !fields[name] {
			return nil, http.StatusBadRequest, fmt.Sprintf("No field '%s' in the structure of type '%s'", name, doctype)
		}
	}
	emb, ok := put.Fields["embedding"].(map[string]any)
	if !ok {
		return nil, http.StatusBadRequest, "Field 'embedding': expected a tensor {\"values\": [...]}"
	}
	vals, ok := emb["values"].([]any)
	if !ok || len(vals) != Dim {
		return nil, http.StatusBadRequest, fmt.Sprintf("Field 'embedding': dense tensor of type tensor<float>(x[%d]) needs %d values", Dim, Dim)
	}
	vec := make([]float64, Dim)
	for i, v := range vals {
		f, ok := v.(float64)
		if !ok {
			return nil, http.StatusBadRequest, "Field 'embedding': values must be numbers"
		}
		vec[i] = f
	}
	put.Fields["embedding"] = vec
	return put.Fields, http.StatusOK, ""
}
