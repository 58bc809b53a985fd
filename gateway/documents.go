package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Documents reach the tenant's index over HTTP. An upload is stored in
// the bus's object store and indexed by a workflow of `ingest` steps (a
// batch of files each), so it scales out with workers and is followed
// like any workflow; listing, reading and deleting documents are requests
// to the ingest agents, which hold the index.

// DocumentsConfig bounds uploads.
type DocumentsConfig struct {
	// MaxUploadBytes bounds one POST /v1/documents body; default 64 MiB.
	MaxUploadBytes int64
	// FilesPerStep is how many files one ingest step indexes; default 32.
	// Smaller batches spread an upload over more workers.
	FilesPerStep int
	// RequestTimeout bounds a list, get or delete; default 10s.
	RequestTimeout time.Duration
}

func (c *DocumentsConfig) setDefaults() {
	if c.MaxUploadBytes == 0 {
		c.MaxUploadBytes = 64 << 20
	}
	if c.FilesPerStep == 0 {
		c.FilesPerStep = 32
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 10 * time.Second
	}
}

// Validate reports every problem with the configuration.
func (c DocumentsConfig) Validate() error {
	var errs []error
	if c.MaxUploadBytes < 0 {
		errs = append(errs, fmt.Errorf("gateway: documents: MaxUploadBytes %d is negative", c.MaxUploadBytes))
	}
	if c.FilesPerStep < 0 || c.FilesPerStep > 1000 {
		errs = append(errs, fmt.Errorf("gateway: documents: FilesPerStep %d not in [1, 1000]", c.FilesPerStep))
	}
	return errors.Join(errs...)
}

// Limits of one upload's names and fields.
const (
	maxDocumentName = 512
	maxUploadFiles  = 10_000
	// ingestCapability is the agents' capability that indexes uploads
	// (agents/ingest; the gateway never imports an agent).
	ingestCapability = "ingest"
)

// UploadedFile is one file of an upload, as stored.
type UploadedFile struct {
	// Name is the file name as uploaded; it becomes the document id.
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Object string `json:"object"`
	Format string `json:"format,omitempty"`
}

// DocumentsResponse answers POST /v1/documents: the ingest workflow, as
// POST /v1/workflows answers, and the files it indexes.
type DocumentsResponse struct {
	SubmitResponse
	UploadID string         `json:"upload_id"`
	Files    []UploadedFile `json:"files"`
	Bytes    int64          `json:"bytes"`
}

// routeUpload is the upload's route pattern, whose bodies are not only JSON.
const routeUpload = "POST /v1/documents"

func (g *Gateway) routesDocuments() {
	g.mux.HandleFunc(routeUpload, g.upload)
	g.mux.HandleFunc("GET /v1/documents", g.listDocuments)
	g.mux.HandleFunc("GET /v1/documents/{id...}", g.getDocument)
	g.mux.HandleFunc("DELETE /v1/documents/{id...}", g.deleteDocument)
}

// uploadBody is jsonBody for POST /v1/documents, which also takes
// multipart/form-data files and JSONL streams.
func uploadBody(w http.ResponseWriter, r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && (mt == "multipart/form-data" || jsonlType(mt)) {
		return true
	}
	if err == nil && mt == "application/json" {
		return jsonBody(w, r)
	}
	p := headerProblem("Content-Type", "%s: want multipart/form-data (files), application/json (records) or application/x-ndjson (JSONL records)", quoted(r.Header.Get("Content-Type")))
	writeError(w, http.StatusUnsupportedMediaType, apiError{Code: "unsupported_media_type", Message: p.String(), Problems: []Problem{p}})
	return false
}

func jsonlType(mt string) bool {
	switch mt {
	case "application/x-ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines":
		return true
	}
	return false
}

// upload answers POST /v1/documents: it stores the files, then starts
// the workflow that indexes them. Nothing is indexed from an upload that
// was refused (too large, malformed, a bad name): its stored files are
// removed before the answer.
func (g *Gateway) upload(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	quota, err := g.quotas.startUpload(r.Context(), tenant, r.ContentLength)
	if err != nil {
		g.writeSubmitError(w, tenant, "", "", err)
		return
	}
	upload := newWorkflowID()
	r.Body = http.MaxBytesReader(w, r.Body, g.cfg.Documents.MaxUploadBytes)
	st := &uploadStore{g: g, tenant: tenant, upload: upload}
	meta, workflow, p, status := st.read(r)
	if p != nil {
		st.discard()
		code := "invalid_request"
		if status == http.StatusRequestEntityTooLarge {
			code = "too_large"
		}
		writeError(w, status, apiError{Code: code, Message: p.String(), Problems: []Problem{*p}})
		return
	}
	if len(st.files) == 0 {
		st.discard()
		writeBadRequest(w, Problem{In: InBody, Message: "no documents: send files as multipart/form-data, records as JSON, or JSONL"})
		return
	}
	undo, err := g.quotas.admitUpload(tenant, quota, st.bytes)
	if err != nil {
		st.discard()
		g.writeSubmitError(w, tenant, "", "", err)
		return
	}
	sub := events.WorkflowSubmitted{Query: ingestQuery(st.files), Plan: st.plan(g.cfg.Documents.FilesPerStep, meta),
		Metadata: map[string]string{"kind": "ingest", "upload": upload, "files": strconv.Itoa(len(st.files))}}
	resp, ok := g.submitWorkflow(w, r, tenant, "", workflow, sub)
	if !ok {
		undo()
		st.discard()
		return
	}
	writeJSON(w, http.StatusAccepted, DocumentsResponse{SubmitResponse: resp, UploadID: upload, Files: st.files, Bytes: st.bytes})
}

// uploadStore holds one upload's files as they are stored.
type uploadStore struct {
	g              *Gateway
	tenant, upload string
	files          []UploadedFile
	bytes          int64
}

// read stores the body's documents. It returns the upload's metadata and
// workflow id (multipart fields), or the problem and its status.
func (st *uploadStore) read(r *http.Request) (map[string]any, string, *Problem, int) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case mt == "multipart/form-data":
		return st.multipart(r)
	case jsonlType(mt):
		p, status := st.put(r.Context(), "records.jsonl", "jsonl", r.Body)
		return nil, "", p, status
	default: // application/json: uploadBody let nothing else through
		body, err := io.ReadAll(r.Body)
		if err != nil {
			p, status := bodyProblem(err, st.g.cfg.Documents.MaxUploadBytes)
			return nil, "", p, status
		}
		p, status := st.putRecords(r.Context(), body)
		return nil, "", p, status
	}
}

// multipart stores each file part; the fields "metadata" (a JSON object
// added to every chunk) and "workflow_id" are read too.
func (st *uploadStore) multipart(r *http.Request) (map[string]any, string, *Problem, int) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, "", &Problem{In: InBody, Message: "multipart body: " + err.Error()}, http.StatusBadRequest
	}
	var meta map[string]any
	var workflow string
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return meta, workflow, nil, 0
		}
		if err != nil {
			p, status := bodyProblem(err, st.g.cfg.Documents.MaxUploadBytes)
			return nil, "", p, status
		}
		name, field := rawFileName(part), part.FormName()
		switch {
		case name != "":
			if p, status := st.put(r.Context(), name, "", part); p != nil {
				return nil, "", p, status
			}
		case field == "metadata" || field == "workflow_id":
			v, err := io.ReadAll(io.LimitReader(part, 64<<10))
			if err != nil {
				p, status := bodyProblem(err, st.g.cfg.Documents.MaxUploadBytes)
				return nil, "", p, status
			}
			if field == "workflow_id" {
				workflow = strings.TrimSpace(string(v))
				if err := subjects.ValidWorkflow(workflow); err != nil || workflow == reservedWorkflowID {
					return nil, "", &Problem{In: InBody, Name: "workflow_id", Message: fmt.Sprintf("%s is not a valid workflow id", quoted(workflow))}, http.StatusBadRequest
				}
				continue
			}
			if err := json.Unmarshal(v, &meta); err != nil || meta == nil {
				return nil, "", &Problem{In: InBody, Name: "metadata", Message: "want a JSON object added to every chunk's metadata"}, http.StatusBadRequest
			}
		default:
			return nil, "", &Problem{In: InBody, Name: field, Message: "unknown form field: want files, metadata or workflow_id"}, http.StatusBadRequest
		}
		_ = part.Close()
	}
}

// rawFileName is a part's filename as sent: Part.FileName keeps only its
// last element, but a document's id is the whole relative path
// ("guides/intro.md"), as `agentbus index` names it. It is an id, never
// a path on this machine.
func rawFileName(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil || params["filename"] == "" {
		return p.FileName()
	}
	return params["filename"]
}

// put stores one file of the upload.
func (st *uploadStore) put(ctx context.Context, name, format string, body io.Reader) (*Problem, int) {
	if p := checkDocumentName(name); p != nil {
		return p, http.StatusBadRequest
	}
	if len(st.files) >= maxUploadFiles {
		return &Problem{In: InBody, Name: name, Message: fmt.Sprintf("more than %d files in one upload", maxUploadFiles)}, http.StatusBadRequest
	}
	obj, err := bus.UploadName(st.tenant, st.upload, len(st.files))
	if err != nil {
		return &Problem{In: InBody, Message: err.Error()}, http.StatusInternalServerError
	}
	n, err := st.g.bus.PutUpload(ctx, obj, body)
	if err != nil {
		_ = st.g.bus.DeleteUpload(context.WithoutCancel(ctx), obj)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return bodyProblem(mbe, st.g.cfg.Documents.MaxUploadBytes)
		}
		st.g.log.Error("store upload", "tenant", st.tenant, "object", obj, "err", err)
		return &Problem{In: InBody, Name: name, Message: "could not store the file: " + err.Error()}, http.StatusServiceUnavailable
	}
	st.files = append(st.files, UploadedFile{Name: name, Size: n, Object: obj, Format: format})
	st.bytes += n
	return nil, 0
}

// putRecords stores JSON records (one object or an array) as JSONL.
func (st *uploadStore) putRecords(ctx context.Context, body []byte) (*Problem, int) {
	var recs []json.RawMessage
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		recs = []json.RawMessage{trimmed}
	} else if err := json.Unmarshal(trimmed, &recs); err != nil {
		return &Problem{In: InBody, Message: "want a record {id, title, text, metadata} or an array of them: " + err.Error()}, http.StatusBadRequest
	}
	var buf bytes.Buffer
	for i, raw := range recs {
		var rec struct {
			ID       string         `json:"id"`
			Title    string         `json:"title"`
			Text     string         `json:"text"`
			Source   string         `json:"source"`
			Metadata map[string]any `json:"metadata"`
		}
		ptr := "/" + strconv.Itoa(i)
		if len(recs) == 1 && trimmed[0] == '{' {
			ptr = ""
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return &Problem{In: InBody, Pointer: ptr, Message: "want a record {id, title, text, metadata}: " + err.Error()}, http.StatusBadRequest
		}
		if p := checkDocumentName(rec.ID); p != nil {
			p.Name, p.Pointer = "", ptr+"/id"
			return p, http.StatusBadRequest
		}
		if strings.TrimSpace(rec.Text) == "" {
			return &Problem{In: InBody, Pointer: ptr + "/text", Message: "missing or empty: the document's text"}, http.StatusBadRequest
		}
		line, _ := json.Marshal(rec)
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return st.put(ctx, "records.jsonl", "jsonl", &buf)
}

// discard removes what the upload stored.
func (st *uploadStore) discard() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, f := range st.files {
		_ = st.g.bus.DeleteUpload(ctx, f.Object)
	}
}

// ingestInput is agents/ingest.Input as the gateway writes it.
type ingestInput struct {
	Upload   string         `json:"upload"`
	Files    []ingestFile   `json:"files"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

type ingestFile struct {
	Object string `json:"object"`
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Format string `json:"format,omitempty"`
}

// plan cuts the files into ingest steps of at most per files each; they
// have no dependencies, so workers share them.
func (st *uploadStore) plan(per int, meta map[string]any) *events.Plan {
	plan := &events.Plan{}
	for i := 0; i < len(st.files); i += per {
		in := ingestInput{Upload: st.upload, Metadata: meta}
		for _, f := range st.files[i:min(i+per, len(st.files))] {
			in.Files = append(in.Files, ingestFile{Object: f.Object, Name: f.Name, Size: f.Size, Format: f.Format})
		}
		raw, _ := json.Marshal(in)
		plan.Steps = append(plan.Steps, events.PlanStep{ID: fmt.Sprintf("ingest-%d", i/per+1), Capability: ingestCapability, Input: raw})
	}
	return plan
}

// ingestQuery names what a workflow ingests, for lists and the dashboard.
func ingestQuery(files []UploadedFile) string {
	names := make([]string, 0, 3)
	for _, f := range files[:min(3, len(files))] {
		names = append(names, f.Name)
	}
	s := fmt.Sprintf("ingest %d file(s): %s", len(files), strings.Join(names, ", "))
	if len(files) > 3 {
		s += ", …"
	}
	return s
}

// checkDocumentName refuses a document name (its id) that is empty, too
// long, not UTF-8 or holds control characters.
func checkDocumentName(name string) *Problem {
	bad := func(format string, args ...any) *Problem {
		return &Problem{In: InBody, Name: "filename", Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.TrimSpace(name) == "":
		return bad("empty: every document needs a name (its id)")
	case len(name) > maxDocumentName:
		return bad("%s is longer than %d bytes", quoted(name), maxDocumentName)
	case !utf8.ValidString(name):
		return bad("%s is not valid UTF-8", quoted(name))
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return bad("%s holds control characters", quoted(name))
	}
	return nil
}

// bodyProblem describes a body that could not be read: 413 with the limit
// when it was too large.
func bodyProblem(err error, limit int64) (*Problem, int) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &Problem{In: InBody, Message: fmt.Sprintf("upload exceeds %d bytes (the gateway's --max-upload-bytes)", limit)}, http.StatusRequestEntityTooLarge
	}
	return &Problem{In: InBody, Message: "reading body: " + err.Error()}, http.StatusBadRequest
}

// listDocuments answers GET /v1/documents?after=&limit=.
func (g *Gateway) listDocuments(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	req := map[string]any{}
	if v := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeBadRequest(w, queryProblem("limit", "%s: want an integer in [1, 1000]", quoted(v)))
			return
		}
		req["limit"] = n
	}
	if q.Has("after") {
		req["after"] = q.Get("after")
	}
	g.documentsCall(w, r, tenant, "list", req)
}

// getDocument answers GET /v1/documents/{id}.
func (g *Gateway) getDocument(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	g.documentsCall(w, r, tenant, "get", map[string]any{"id": r.PathValue("id")})
}

// deleteDocument answers DELETE /v1/documents/{id}: every chunk of the
// document is removed from the index.
func (g *Gateway) deleteDocument(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	g.documentsCall(w, r, tenant, "delete", map[string]any{"id": r.PathValue("id")})
}

// documentsCall asks the ingest agents and relays their answer.
func (g *Gateway) documentsCall(w http.ResponseWriter, r *http.Request, tenant, op string, req map[string]any) {
	subj, err := subjects.Documents(tenant, op)
	if err != nil {
		writeError(w, http.StatusInternalServerError, apiError{Code: "internal", Message: err.Error()})
		return
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.Documents.RequestTimeout)
	defer cancel()
	out, err := g.bus.Call(ctx, subj, body)
	var se *bus.ServiceError
	switch {
	case errors.As(err, &se) && se.Code == http.StatusNotFound:
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: se.Message,
			Problems: []Problem{{In: InPath, Name: "id", Message: "no such document: " + quoted(fmt.Sprint(req["id"]))}}})
	case errors.As(err, &se) && se.Code == http.StatusBadRequest:
		writeBadRequest(w, Problem{In: InQuery, Message: se.Message})
	case errors.Is(err, bus.ErrNoResponder):
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable",
			Message: "no ingest agent answered: documents are served by workers running the ingest capability"})
	case err != nil:
		writeError(w, http.StatusBadGateway, apiError{Code: "upstream", Message: err.Error()})
	default:
		writeJSON(w, http.StatusOK, json.RawMessage(out))
	}
}
