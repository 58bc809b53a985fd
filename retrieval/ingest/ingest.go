package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/subjects"
)

// Sentinel errors.
var (
	// ErrConfig: the Config is not usable.
	ErrConfig = errors.New("ingest: invalid config")
	// ErrJournal: the progress journal could not be read or written.
	ErrJournal = errors.New("ingest: journal")
)

// Config says where documents go and how they are cut.
type Config struct {
	// Backend receives the chunks. Required.
	Backend retrieval.Backend
	// Tenant is whose index is written. Required.
	Tenant string
	// Chunker sizes chunks; the zero value means its defaults.
	Chunker retrieval.ChunkerConfig
	// BatchSize is how many chunks go to one Backend.Index call; default 64.
	BatchSize int
	// Journal is the progress journal's path, e.g.
	// <data>/index-journal/<tenant>.jsonl; "" means runs are not resumable.
	Journal string
	// Progress, when set, is called after every batch and every file,
	// on the goroutine that called Run.
	Progress func(Progress)
	// Limits bound what one file may cost to read; zero means defaults.
	Limits Limits
	// AppendOnly writes chunks with Backend.Index even when the backend
	// is a retrieval.DocumentStore. By default such a backend gets each
	// document whole through ReplaceBatch, so a re-indexed document that
	// now has fewer chunks loses the old ones, atomically.
	AppendOnly bool
}

func (c *Config) setDefaults() {
	if c.BatchSize <= 0 {
		c.BatchSize = 64
	}
	c.Limits.setDefaults()
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Backend == nil {
		errs = append(errs, fmt.Errorf("%w: Backend is required", ErrConfig))
	}
	if err := subjects.ValidTenant(c.Tenant); err != nil {
		errs = append(errs, fmt.Errorf("%w: Tenant: %w", ErrConfig, err))
	}
	return errors.Join(errs...)
}

// Progress is how far a run has got. Totals are known once the paths are
// listed; documents and chunks have no total until the files are read.
type Progress struct {
	Files      int    `json:"files"`
	FilesTotal int    `json:"files_total"`
	Bytes      int64  `json:"bytes"`
	BytesTotal int64  `json:"bytes_total"`
	Documents  int    `json:"documents"`
	Chunks     int    `json:"chunks"`
	Skipped    int    `json:"skipped"`
	Errors     int    `json:"errors"`
	File       string `json:"file,omitempty"`
}

// Problem is one thing that could not be indexed: where and why.
type Problem struct {
	File string `json:"file"`
	// Line is the 1-based line of a JSONL record; 0 for a whole file.
	Line   int    `json:"line,omitempty"`
	Reason string `json:"reason"`
	// Code says what kind of problem it is: one of the Code constants.
	Code string `json:"code,omitempty"`
}

// Err is the problem as an error: a *FileError wrapping the sentinel of
// its Code (ErrTooLarge, ErrCorrupt, …), so errors.Is works on it.
func (p Problem) Err() error {
	kind := sentinels[p.Code]
	if kind == nil {
		kind = errProblem
	}
	file := p.File
	if p.Line > 0 {
		file += ":" + strconv.Itoa(p.Line)
	}
	return &FileError{File: file, Reason: p.Reason, Kind: kind}
}

// errProblem is the kind of a problem with no sentinel of its own (a bad
// JSONL line, a file that could not be opened).
var errProblem = errors.New("ingest: problem")

// problemOf turns a per-file error into a Problem.
func problemOf(file string, err error) Problem {
	var fe *FileError
	if errors.As(err, &fe) {
		return Problem{File: file, Reason: fe.Reason, Code: fe.Code()}
	}
	return Problem{File: file, Reason: err.Error(), Code: CodeIO}
}

// String is "file:line: reason", or "file: reason" for a whole file.
func (p Problem) String() string {
	if p.Line > 0 {
		return p.File + ":" + strconv.Itoa(p.Line) + ": " + p.Reason
	}
	return p.File + ": " + p.Reason
}

// Summary is what a run did.
type Summary struct {
	// Files is how many files were read (wholly, or the rest of a
	// JSONL file after its last finished line).
	Files int `json:"files"`
	// Skipped is how many files were finished in an earlier run and have
	// not changed since.
	Skipped int `json:"skipped"`
	// Documents and Chunks count what was written in this run.
	Documents int           `json:"documents"`
	Chunks    int           `json:"chunks"`
	Errors    []Problem     `json:"errors,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
}

// Err is every problem of the run joined (each a *FileError), or nil.
func (s Summary) Err() error {
	errs := make([]error, len(s.Errors))
	for i, p := range s.Errors {
		errs[i] = p.Err()
	}
	return errors.Join(errs...)
}

// Ingester writes documents into one tenant's index. It is not safe for
// concurrent use: run one at a time per journal.
type Ingester struct {
	cfg     Config
	chunker *retrieval.Chunker
	store   retrieval.DocumentStore // nil: write with Index
}

// New returns an Ingester for cfg after applying its defaults.
func New(cfg Config) (*Ingester, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ch, err := retrieval.NewChunker(cfg.Chunker)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	in := &Ingester{cfg: cfg, chunker: ch}
	if d, ok := cfg.Backend.(retrieval.DocumentStore); ok && !cfg.AppendOnly {
		in.store = d
	}
	return in, nil
}

// Run indexes the files at paths (files, or directories walked
// recursively for files of a known extension — see Formats; hidden
// entries are skipped). A file named explicitly is read whatever its
// extension, its format sniffed from its content. It returns the summary so far together with any error
// that stopped it: the context's, the backend's or the journal's.
func (in *Ingester) Run(ctx context.Context, paths ...string) (Summary, error) {
	start := time.Now()
	r := &runner{in: in, ctx: ctx, seen: map[string]string{}}
	files, problems := list(paths)
	r.sum.Errors = problems
	for _, f := range files {
		r.prog.FilesTotal++
		r.prog.BytesTotal += f.size
	}
	j, err := openJournal(ctx, in.cfg, in.cfg.Journal)
	if err != nil {
		return r.summary(start), err
	}
	r.journal = j
	defer j.close()
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return r.summary(start), err
		}
		if err := r.file(f); err != nil {
			return r.summary(start), err
		}
	}
	if err := r.flush(true); err != nil {
		return r.summary(start), err
	}
	r.report("")
	return r.summary(start), nil
}

// JSONL indexes the JSONL documents read from src, naming them name in
// problems. It keeps no journal: rerunning it rewrites the same chunks.
// This is how a corpus embedded in the binary is indexed.
func (in *Ingester) JSONL(ctx context.Context, name string, src io.Reader) (Summary, error) {
	start := time.Now()
	r := &runner{in: in, ctx: ctx, seen: map[string]string{}, journal: &journal{}}
	r.prog.FilesTotal = 1
	err := r.jsonl(fileEntry{path: name, display: name}, src, 0)
	if err == nil {
		err = r.flush(true)
	}
	r.prog.Files = 1
	r.report("")
	return r.summary(start), err
}

// File is one file given in memory, e.g. an upload.
type File struct {
	// Name is the file's name; its extension and its content decide the
	// format (Detect). Required.
	Name string
	// ID is the document id; default Name. A JSONL file's documents keep
	// their own ids.
	ID string
	// Data is the file's content.
	Data []byte
	// Metadata is added to every chunk of the file's document(s), under
	// the file's own (a JSONL record's metadata wins over it).
	Metadata map[string]any
}

// Files indexes files given in memory, one document each (a JSONL file
// one per line), exactly as Run does files on disk but with no journal:
// each file's problem is reported in the Summary and the others are
// indexed. It returns the summary so far and any error that stopped it
// (the context's or the backend's).
func (in *Ingester) Files(ctx context.Context, files ...File) (Summary, error) {
	start := time.Now()
	r := &runner{in: in, ctx: ctx, seen: map[string]string{}, journal: &journal{}}
	for _, f := range files {
		r.prog.FilesTotal++
		r.prog.BytesTotal += int64(len(f.Data))
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return r.summary(start), err
		}
		id := f.ID
		if id == "" {
			id = f.Name
		}
		fe := fileEntry{path: f.Name, rel: id, display: f.Name, size: int64(len(f.Data)), meta: f.Metadata}
		r.sum.Files++
		r.cur, r.base = fe.display, r.prog.Bytes
		if err := r.read(fe, f.Data, 0, entry{Path: f.Name}); err != nil {
			return r.summary(start), err
		}
		r.prog.Files++
		r.prog.Bytes = r.base + fe.size
		r.report(fe.display)
	}
	if err := r.flush(true); err != nil {
		return r.summary(start), err
	}
	r.report("")
	return r.summary(start), nil
}

func displayPath(p string) string { return filepath.ToSlash(p) }
