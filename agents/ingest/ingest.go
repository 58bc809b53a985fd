package ingest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/retrieval"
	files "github.com/agentbus/agentbus/retrieval/ingest"
)

// progressEvery spaces a step's progress events while it reads files.
const progressEvery = 500 * time.Millisecond

// Capability is the capability the ingest agent serves.
const Capability = "ingest"

// FormatJSONL marks a File whose upload is JSONL records
// ({"id","title","text","metadata"} per line), each its own document.
const FormatJSONL = string(files.FormatJSONL)

// Input is an ingest step's input: the uploads to index.
type Input struct {
	// Upload is the id of the upload the files came in.
	Upload string `json:"upload"`
	Files  []File `json:"files"`
	// Documents are indexed as given (a web page a select step kept, say);
	// with no Files and no Documents the agent indexes the "documents" of
	// the outputs of the steps it depends on.
	Documents []Document `json:"documents,omitempty"`
	// Metadata is added to every chunk of every file.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Document is one document given whole, not as an upload: its ID (a URL
// for a web page), text and where it came from.
type Document struct {
	ID       string         `json:"id"`
	Title    string         `json:"title,omitempty"`
	Text     string         `json:"text"`
	Source   string         `json:"source,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// File is one uploaded file.
type File struct {
	// Object is the upload's name in the object store (bus.UploadName).
	Object string `json:"object"`
	// Name is the file's name as uploaded; it is the document id unless
	// ID is set.
	Name  string `json:"name"`
	ID    string `json:"id,omitempty"`
	Title string `json:"title,omitempty"`
	Size  int64  `json:"size"`
	// Format forces a format ("jsonl" for a record stream); empty means
	// detected from the name and the content.
	Format string `json:"format,omitempty"`
}

// Output is what an ingest step did.
type Output struct {
	Files     int       `json:"files"`
	Documents int       `json:"documents"`
	Chunks    int       `json:"chunks"`
	Bytes     int64     `json:"bytes"`
	Indexed   []Indexed `json:"indexed"`
	Problems  []Problem `json:"problems,omitempty"`
}

// Indexed is one document written.
type Indexed struct {
	File   string `json:"file"`
	ID     string `json:"id"`
	Format string `json:"format"`
	Chunks int    `json:"chunks"`
}

// Problem is one file, or one JSONL line, that was not indexed, and why.
type Problem struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Config configures the agent. Bus and Store are required.
type Config struct {
	// Bus reads the uploads.
	Bus *bus.Bus
	// Store is the index written; the agent does not close it.
	Store retrieval.DocumentStore
	// Limits bound what one file may cost; the zero value means
	// retrieval/ingest's defaults.
	Limits files.Limits
	// Chunker sizes chunks; the zero value means its defaults.
	Chunker retrieval.ChunkerConfig
	// KeepUploads leaves indexed uploads in the object store (they expire
	// after bus.UploadsMaxAge) instead of deleting them.
	KeepUploads bool
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("ingest: Bus is required"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("ingest: Store is required"))
	}
	return errors.Join(errs...)
}

// Agent indexes uploaded documents. It is safe for concurrent use.
type Agent struct {
	cfg      Config
	chunker  *retrieval.Chunker
	maxChars int
}

var _ agents.Agent = (*Agent)(nil)

// New returns the agent for cfg.
func New(cfg Config) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ch, err := retrieval.NewChunker(cfg.Chunker)
	if err != nil {
		return nil, fmt.Errorf("ingest: Chunker: %w", err)
	}
	maxChars := cfg.Chunker.MaxChars
	if maxChars == 0 {
		maxChars = 800 // retrieval.ChunkerConfig's default
	}
	return &Agent{cfg: cfg, chunker: ch, maxChars: maxChars}, nil
}

// Card describes the ingest agent.
func (a *Agent) Card() agents.Card {
	return agents.Card{
		Name: "ingest", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Indexes uploaded documents (Markdown, text, HTML, PDF, DOCX, CSV, XLSX, JSONL records) into the tenant's search index, replacing each document's chunks atomically.",
		Examples:    []string{"index these files", "ingest the uploaded documents", "add this PDF to the knowledge base"},
	}
}

// Health reports whether the index answers.
func (a *Agent) Health(ctx context.Context) error {
	_, err := a.cfg.Store.Count(ctx, "default")
	return err
}

// Handle indexes the step's files. Unreadable files are problems in the
// output; a failure of the object store or the index fails the step (and
// it is retried: every write replaces whole documents by id).
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in Input
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, fmt.Errorf("%w: ingest input: %v", agents.ErrPermanent, err)
	}
	if len(in.Files) == 0 {
		docs := dependencyDocuments(req.DependencyOutputs)
		if len(docs) == 0 && len(in.Documents) == 0 && len(req.DependencyOutputs) == 0 {
			return nil, fmt.Errorf("%w: ingest input: no /files, no /documents, and no steps it depends on", agents.ErrPermanent)
		}
		// A select step that kept nothing leaves nothing to index: that
		// is an answer (0 documents), not a failure.
		return a.documents(ctx, req, emit, append(in.Documents, docs...), in.Metadata)
	}
	for i, f := range in.Files {
		if f.Object == "" || f.Name == "" {
			return nil, fmt.Errorf("%w: ingest input: /files/%d needs object and name", agents.ErrPermanent, i)
		}
	}
	out := Output{Indexed: []Indexed{}}
	var total int64
	for _, f := range in.Files {
		total += f.Size
	}
	// Every file is read first, then all are written in one batch: one
	// index commit per step rather than per file.
	var batch []retrieval.Version
	fileOf := map[string]string{} // document id → file
	said := time.Now()
	for i, f := range in.Files {
		docs, problems, err := a.read(ctx, req.TenantID, f, in.Metadata)
		if err != nil {
			return nil, err
		}
		out.Problems = append(out.Problems, problems...)
		for _, d := range docs {
			if first, dup := fileOf[d.DocID]; dup {
				out.Problems = append(out.Problems, Problem{File: f.Name, Code: "duplicate", Reason: fmt.Sprintf("document id %q is also %s's, in the same step; the first is indexed", d.DocID, first)})
				continue
			}
			fileOf[d.DocID] = f.Name
			batch = append(batch, d)
		}
		out.Files++
		out.Bytes += f.Size
		// At most one progress event per progressEvery: a step of many
		// small files must not flood its event log.
		if time.Since(said) >= progressEvery {
			said = time.Now()
			pct := 90 * float64(i+1) / float64(len(in.Files))
			_ = emit.Progress(ctx, pct, fmt.Sprintf("read %s: %d of %d files, %s of %s", f.Name, i+1, len(in.Files), size(out.Bytes), size(total)))
		}
	}
	written, problems, err := a.write(ctx, req.TenantID, batch, fileOf)
	if err != nil {
		return nil, err
	}
	out.Problems = append(out.Problems, problems...)
	for _, d := range written {
		out.Documents++
		out.Chunks += len(d.Chunks)
		out.Indexed = append(out.Indexed, Indexed{File: fileOf[d.DocID], ID: d.DocID, Format: formatOf(d), Chunks: len(d.Chunks)})
	}
	_ = emit.Progress(ctx, 100, fmt.Sprintf("indexed %d files: %d documents, %d chunks, %s", out.Files, out.Documents, out.Chunks, size(out.Bytes)))
	if !a.cfg.KeepUploads {
		for _, f := range in.Files {
			_ = a.cfg.Bus.DeleteUpload(ctx, f.Object)
		}
	}
	return json.Marshal(out)
}

// write replaces the documents in one batch; if the index refuses one as
// invalid, each is written alone so that only the invalid ones are
// problems. It returns what was written.
func (a *Agent) write(ctx context.Context, tenant string, docs []retrieval.Version, fileOf map[string]string) ([]retrieval.Version, []Problem, error) {
	if len(docs) == 0 {
		return nil, nil, nil
	}
	err := a.cfg.Store.ReplaceBatch(ctx, tenant, docs)
	if err == nil {
		return docs, nil, nil
	}
	if !errors.Is(err, retrieval.ErrInvalidDocument) {
		return nil, nil, fmt.Errorf("ingest: index %d documents: %w", len(docs), err)
	}
	var written []retrieval.Version
	var problems []Problem
	for _, d := range docs {
		err := a.cfg.Store.Replace(ctx, tenant, d.DocID, d.Chunks)
		switch {
		case errors.Is(err, retrieval.ErrInvalidDocument):
			problems = append(problems, Problem{File: fileOf[d.DocID], Code: "invalid", Reason: err.Error()})
		case err != nil:
			return nil, nil, fmt.Errorf("ingest: index %s: %w", d.DocID, err)
		default:
			written = append(written, d)
		}
	}
	return written, problems, nil
}

// read turns one upload into document versions. A missing, oversized or
// unreadable file is a problem; only a failing object store is an error.
func (a *Agent) read(ctx context.Context, tenant string, f File, md map[string]any) ([]retrieval.Version, []Problem, error) {
	max := a.limits().MaxFileBytes
	data, err := a.cfg.Bus.GetUpload(ctx, tenant, f.Object, max)
	switch {
	case errors.Is(err, bus.ErrNotFound):
		return nil, []Problem{{File: f.Name, Code: "missing", Reason: err.Error()}}, nil
	case errors.Is(err, bus.ErrUploadTooLarge):
		return nil, []Problem{{File: f.Name, Code: "too_large", Reason: err.Error()}}, nil
	case err != nil:
		return nil, nil, err
	}
	if f.Format == FormatJSONL || (f.Format == "" && files.FormatOf(f.Name) == files.FormatJSONL) {
		docs, problems := a.records(f.Name, data, md)
		return docs, problems, nil
	}
	ex, err := files.Extract(f.Name, data, a.cfg.Limits)
	if err != nil {
		return nil, []Problem{problemOf(f.Name, err)}, nil
	}
	id := f.ID
	if id == "" {
		id = f.Name
	}
	title := cmp.Or(f.Title, ex.Title, baseName(f.Name))
	doc := retrieval.Document{ID: id, Title: title, Source: f.Name, Metadata: mergeMeta(md, map[string]any{"path": f.Name})}
	chunks := files.Chunks(a.chunker, a.maxChars, doc, ex)
	return []retrieval.Version{{DocID: id, Chunks: chunks}}, nil, nil
}

func (a *Agent) limits() files.Limits {
	lim := a.cfg.Limits
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = 64 << 20 // retrieval/ingest's default
	}
	return lim
}

// problemOf describes a file that could not be read.
func problemOf(name string, err error) Problem {
	var fe *files.FileError
	if errors.As(err, &fe) {
		return Problem{File: name, Code: fe.Code(), Reason: fe.Reason}
	}
	return Problem{File: name, Code: "unreadable", Reason: err.Error()}
}

func formatOf(v retrieval.Version) string {
	if len(v.Chunks) > 0 {
		if f, ok := v.Chunks[0].Metadata["format"].(string); ok {
			return f
		}
	}
	return ""
}

func mergeMeta(ms ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func baseName(name string) string {
	if i := strings.LastIndexAny(name, "/\\"); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.LastIndex(name, "."); i > 0 {
		name = name[:i]
	}
	return name
}

// size formats bytes for a progress message.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
